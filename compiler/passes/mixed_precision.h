// compiler/passes/mixed_precision.h — keelc --precision: stores weights and
// activations in f16 or bf16 where the ops allow it, keeps f32 where accuracy
// needs it, inserts the casts between the two, and reports what it did.
//
// What may run in half is a fact about each op: its registry policy
// (ops::HalfPolicy, ops/op_def.h). Kernels always compute in f32 (GEMM and conv
// accumulate in f32, elementwise chains work in f32); the policy decides which
// values are *stored* in half between kernels:
//
//   kHalf      the node's f32 operands become half (a converted constant, or a
//              Cast placed before the first consumer and shared by the others),
//              its type rule is re-run and its f32 results become half. A type
//              rule that refuses the half operands leaves the node in f32 (and
//              the summary says so).
//   kKeepF32   operands this pass turned into half are cast back to f32 (one
//              cast per value, shared); results stay f32. Softmax, the
//              normalizations, sums, Exp/Log/Pow, recurrent ops, ...
//   kUntouched Cast: reads what it gets; its result type is its own attribute.
//
// A Gelu stored in half computes its tanh form, 0.5x(1 + tanh(sqrt(2/pi)(x +
// 0.044715x^3))): it differs from the erf form by at most 4.8e-4 (at x = 2.7,
// below half an f16 step there), and it is the form cuBLASLt's GELU epilogue
// computes, so on CUDA a GEMM's bias and activation become one library call
// (PyTorch's transformer fast path makes the same substitution). The summary
// counts these nodes.
//
// bf16 keeps the residual stream in f32: an elementwise node whose result a
// keep-f32 node (not a softmax) reads and that flows on past it (a pre-norm
// block's residual Add), the bias Adds and reshapes that feed only such nodes,
// and the bias of a Gemm that feeds only them (split off as an Add) stay f32
// (the summary counts them). bf16's 8-bit mantissa rounded that sum once per
// block otherwise (ViT-B/16: 1.1e-2 relative L2 -> 7.7e-3). On CUDA the half
// GEMM before them writes the f32 sum itself (cuBLASLt's D, bias and C in f32;
// passes/fusion.h).
//
// Integer, bool and f64 data is never touched, nor is data the model already
// stores in f16/bf16. Model inputs and outputs keep f32 (casts at the edges)
// unless `half_io`. f32 constants read by half nodes are converted at compile
// time, once; a constant also read by an f32 node keeps its f32 copy too, and
// one read only in half loses it (the executable shrinks by half its weights).
//
// Runs on the typed, canonical top-level graph after constant and BN folding
// and before fusion (the casts are elementwise and fuse into their neighbours).
// Deterministic (graph order only) and idempotent: a second run changes nothing.
// precision fp32 and tf32 leave the graph unchanged (tf32 is a flag in the
// executable for library GEMM/conv, see compile.h).
//
// Errors: Internal when a node's type rule disagrees with the types it had.
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"
#include "keel/status.h"

namespace keel::passes {

enum class Precision : uint8_t { kFp32, kTf32, kFp16, kBf16 };

const char* PrecisionName(Precision precision);  // "fp32", "tf32", "fp16", "bf16"
// "fp32" | "tf32" | "fp16" | "bf16"; InvalidArgument naming the text otherwise.
Result<Precision> ParsePrecision(const std::string& text);
// The storage type of half values: f16 for kFp16, bf16 for kBf16, f32 otherwise.
ir::DType HalfDType(Precision precision);

struct MixedPrecisionOptions {
  Precision precision = Precision::kFp32;
  // Model inputs and outputs in half too (the caller passes and reads f16/bf16).
  bool half_io = false;
};

// What the pass did, for keelc's summary. Counts are of the graph after the pass.
struct MixedPrecisionReport {
  Precision precision = Precision::kFp32;
  bool half_io = false;
  int64_t half_activations = 0;      // non-constant values stored in half
  int64_t half_activation_bytes = 0;
  int64_t half_constants = 0;        // weights converted at compile time
  int64_t half_constant_bytes = 0;   // their bytes in half
  int64_t f32_activations = 0;       // non-constant f32 values that stay f32
  int64_t f32_activation_bytes = 0;
  int64_t f32_constants = 0;         // f32 weights kept (read by f32 nodes)
  int64_t f32_constant_bytes = 0;
  int64_t casts = 0;                 // Cast nodes the pass inserted
  int64_t tanh_gelu = 0;             // Gelu nodes given their tanh form
  struct Kept {
    int64_t nodes = 0;
    std::string reason;
  };
  std::map<std::string, Kept> kept_f32;  // op type -> nodes that stay f32 and why
};

// Rewrites `graph` in place (see the file comment); returns the report.
Result<MixedPrecisionReport> ApplyMixedPrecision(ir::Graph& graph, const MixedPrecisionOptions& options);

class MixedPrecisionPass : public Pass {
 public:
  // `report` (optional, not owned, must outlive Run) receives the last run's report.
  explicit MixedPrecisionPass(MixedPrecisionOptions options, MixedPrecisionReport* report = nullptr)
      : options_(options), report_(report) {}
  std::string name() const override { return "mixed-precision"; }
  std::string description() const override {
    return "store weights and activations in f16/bf16 where ops allow it (keelc --precision)";
  }
  Status Run(ir::Graph& graph) override;

 private:
  MixedPrecisionOptions options_;
  MixedPrecisionReport* report_;
};

}  // namespace keel::passes
