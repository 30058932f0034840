// compiler/ops/op_def.h — what defines an op: OpDef, the single place where an
// op's ONNX forms, type rule, reference semantics, fusion class and lowering
// live. Every layer asks the registry (registry.h) instead of comparing op names:
//
//   frontend     Find + ResolveVersion (which ONNX versions Keel implements),
//                then `normalize`: the ONNX form of that version → one internal
//                form (attributes that later opsets moved to inputs, defaults
//                that changed, legacy flags), before any types are known.
//   passes       `canonicalize` (types known: lift constant operands into
//                attributes, fill rank-dependent defaults, validate), `infer`
//                (output types), reference evaluation (constant folding), the
//                fusion class and the traits below.
//   codegen      the lowering that matches the fusion class (kernel IR, shared
//                by the CPU and NVPTX back ends); the CUDA back end also reads
//                `library` (a cuBLAS/cuDNN candidate).
//
// Fusion classes and their lowering hooks:
//   kElementwise  `scalar`: the output element from the operands' elements at
//                 the same (broadcast) index. Inlined anywhere: into other
//                 elementwise/injective chains and into an anchor's epilogue.
//   kInjective    `injective`: defines each output as an index function of the
//                 inputs (transpose, slice, gather, pad, ...). Inlined into the
//                 reads of whatever consumes it inside one kernel.
//   kAnchor       `kernel`: its own loop nest (contractions, reductions,
//                 windows); injective producers inline into its reads and an
//                 elementwise chain that keeps its output shape fuses into the
//                 store (the epilogue).
//   kView         no kernel: the output is the input's bytes with another shape
//                 (keel.Reshape; Reshape-like ops become it, see `reshape_like`).
//   kNone         never reaches codegen (removed or rewritten by a pass: Identity,
//                 Dropout...; a kNone op that survives is an
//                 internal error naming the pass that should have removed it).
//                 Composite ops (Attention, ...) are kNone with an `expand`
//                 hook: shape inference replaces them by the ops it builds
//                 (expansion.h), and their reference value is that subgraph's.
//
// Reference semantics: elementwise and injective ops need no separate
// evaluator — their lowering *is* their definition, and the reference
// interpreter (reference.h) executes the expressions it builds in double /
// 64-bit integer precision. Anchors provide `evaluate`: a naive, obviously
// correct implementation independent of their optimized kernel.
//
// Ownership: OpDefs are registered once at start-up and immutable afterwards;
// pointers to them stay valid for the process. Thread-safety: read-only after
// registration, so concurrent lookups are safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/lower_context.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/strided_view.h"
#include "keel/status.h"

namespace keel::ops {

enum class FusionClass : uint8_t { kElementwise, kInjective, kAnchor, kView, kNone };
const char* FusionClassName(FusionClass c);

// A vendor-library candidate on CUDA (compiler/driver/cuda_backend.cc decides
// whether the node's shapes and attributes fit; otherwise it is generated).
// kGemm: ONNX Gemm (transA/transB/alpha/beta, bias C); kMatMul: batched A x B.
// kConvTranspose: ONNX ConvTranspose (cuDNN's data gradient of the forward
// convolution). kAttention: keel.Attention (ops/attention_fused.h), a Keel
// kernel of the VM.
enum class LibraryCall : uint8_t { kNone, kGemm, kMatMul, kConv, kConvTranspose, kMaxPool, kAveragePool, kAttention };

// How a library call may absorb this elementwise op after it as its epilogue
// (cuda_backend.cc checks operands and shapes): kRelu max(x, 0); kClip min/max
// bounds; kAdd x + other; kMul x * other; kDiv x / other.
enum class EpilogueRole : uint8_t { kNone, kRelu, kClip, kAdd, kMul, kDiv };

// What a pattern-matching pass may take the op for, beyond its fusion class and
// epilogue role (passes/attention_fusion.h): kConvert, the value of input 0 in
// the output's element type (Cast); kSoftmax, exponentials normalized along
// attribute `axis` (Softmax).
enum class PatternRole : uint8_t { kNone, kConvert, kSoftmax };

// Ops whose semantics is a subgraph, each made static its own way by the
// control-flow lowering (passes/control_flow.h).
enum class ControlFlow : uint8_t { kNone, kIf, kLoop, kScan };

// What the mixed-precision pass (passes/mixed_precision.h, keelc --precision
// fp16|bf16) may do with the op's f32 operands and results. Kernels compute in
// f32 whatever they store; the policy decides what is rounded to half between
// kernels, so it is a fact about the op's numerics, not about its kernel speed.
enum class HalfPolicy : uint8_t {
  kAuto,       // elementwise, injective and view ops: kHalf (pure per-element or
               // data movement); anchors: kKeepF32 until their accumulation is
               // checked in half (then they say kHalf explicitly)
  kHalf,       // f32 operands and results become f16/bf16
  kKeepF32,    // operands and results stay f32 (half producers are cast back);
               // `keep_f32_reason` says why (keelc's summary prints it)
  kUntouched,  // converts element types itself (Cast): operands and results keep
               // the types they have
};

// ---- hooks --------------------------------------------------------------------------

// Import: rewrites a freshly imported node (ONNX attributes, inputs bound by
// position with nullptr for omitted ones, all declared outputs created; no
// types) of ONNX version `version` (the op's since-version the model's opset
// selects) into the internal form. Errors name the node (ops::NodeError).
using NormalizeFn = std::function<Status(ir::Node& node, int version)>;

// Types known: lifts constant operands into attributes, fills defaults that
// depend on ranks, validates attributes, makes axes non-negative. Idempotent.
// An operand that must be constant but is not: ops::NeedsConstant.
using CanonicalizeFn = std::function<Status(ir::Node& node)>;

// Output types (one per node output) of a canonical node whose inputs are typed.
using InferFn = std::function<Result<std::vector<ir::TensorType>>(const ir::Node& node)>;

// Reference evaluation of a canonical node: `inputs` positional (nullptr where
// the node input is nullptr), `out_types` as InferFn returned.
using EvaluateFn = std::function<Result<std::vector<ir::TensorDataPtr>>(
    const ir::Node& node, const std::vector<ir::TensorDataPtr>& inputs, const std::vector<ir::TensorType>& out_types)>;

// kElementwise: the output value from the operands' values. `operands` has one
// entry per node input (a null Expr where the input is omitted), each of its
// input's dtype (f16/bf16 are widened to f32 first); the result may have any
// dtype (it is converted to `out` when stored).
struct ScalarArgs {
  const ir::Node& node;
  std::vector<codegen::Expr> operands;
  ir::DType out;  // the output's dtype (f16/bf16 widened to f32)
};
using ScalarFn = std::function<Result<codegen::Expr>(const ScalarArgs& args)>;

// kInjective: defines every output of `node` in the context (ctx.Define) as an
// index function of its inputs' TensorFns (ctx.Input). Reads must stay in
// bounds for every output index (clamp, then select).
using InjectiveFn = std::function<Status(codegen::LowerContext& ctx, const ir::Node& node)>;

// kAnchor: the statements computing every output; `stores[i]` writes output i
// at an index (for a fused group, stores[0] applies the epilogue first).
using KernelFn = std::function<Result<codegen::Stmt>(codegen::LowerContext& ctx, const ir::Node& node,
                                                     const std::vector<codegen::StoreFn>& stores)>;

// kInjective ops with a loop nest of their own for a fused group that is the node alone
// (its input a group input, its output the group's): the statements storing every output
// element through `store`, or nullopt where the form does not apply (the group then runs the
// injective index function in the generic loop nest).
using AloneKernelFn = std::function<std::optional<codegen::Stmt>(codegen::LowerContext& ctx, const ir::Node& node,
                                                                 const codegen::StoreFn& store)>;

// Composite ops: builds the ops that compute the canonical, typed `node` through
// `b` (inserted before it, each canonicalized and typed at once) and returns the
// values replacing its outputs, one per output.
class Expander;
using ExpandFn = std::function<Result<std::vector<ir::Value*>>(Expander& b, const ir::Node& node)>;

// A per-output-channel scale and shift that follows the node (y = out * s[c] + t[c],
// c the output's axis 1; a folded BatchNormalization) absorbed into the node's
// constant weights and bias, new constants added to `g`. false (and `node`
// unchanged) when the node's operands do not allow it (weights not constant).
using FoldScaleShiftFn = std::function<Result<bool>(ir::Graph& g, ir::Node& node, const std::vector<double>& s,
                                                    const std::vector<double>& t)>;

// An inference-time per-channel affine map of input 0, y = s[c] * x + t[c] (c = axis 1), with
// s and t from the node's constant operands: the values, or nullopt when this node is not
// one (training mode, operands not constant, not f32). BatchNormalization folding uses it.
struct ScaleShift {
  std::vector<double> s, t;
};
using AsScaleShiftFn = std::function<Result<std::optional<ScaleShift>>(const ir::Node& node)>;

// Data movement that reads input 0 through an affine map (strided_view.h):
// output 0 as a view of the elements `input` (input 0's own view) reads, or
// nullopt when the composition is not a strided view. Transpose, Slice and the
// reshape-like ops have it.
using StridedViewFn = std::function<std::optional<StridedView>(const ir::Node& node, const StridedView& input)>;

// ---- the definition -------------------------------------------------------------------

struct OpDef {
  std::string name;     // ONNX op type ("Conv") or a Keel op ("keel.Reshape")
  std::string domain;   // "" = the default ONNX domain; "keel" = internal (never imported)

  // ONNX since-versions of the op up to kMaxOpset (registry.h), ascending, as the
  // ONNX spec lists them; `supported` is the subset Keel implements (empty: all).
  std::vector<int> versions;
  std::vector<int> supported;

  FusionClass fusion = FusionClass::kNone;
  LibraryCall library = LibraryCall::kNone;
  EpilogueRole epilogue = EpilogueRole::kNone;

  // Traits read by passes.
  bool reshape_like = false;   // output = input 0's data, another static shape (becomes keel.Reshape)
  bool identity_like = false;  // output 0 = input 0 (removed by simplify)
  bool commutative = false;    // binary op whose operands may be swapped (CSE)
  // Output types and values depend only on input types (Shape, Size, EyeLike):
  // folded even when the inputs are not constant.
  bool value_independent = false;
  // The pass that removes/rewrites a kNone op (for the error when one survives).
  std::string removed_by;
  ControlFlow control_flow = ControlFlow::kNone;
  PatternRole pattern_role = PatternRole::kNone;
  // The importer turns the node into a constant value (its attribute holds the tensor).
  bool imported_as_constant = false;
  // Mixed precision (see HalfPolicy; ResolveHalfPolicy resolves kAuto).
  HalfPolicy half = HalfPolicy::kAuto;
  std::string keep_f32_reason;
  // Layout (channels_last.h): the inputs that hold channels-last tensors when the
  // node is in channels-last form (output 0 always does); empty: no such form.
  std::vector<size_t> channels_last_operands;
  // Transpose: output = input 0 with axes permuted by attribute `perm`.
  bool permutes_axes = false;
  // Concat: output = the inputs, in order, joined along attribute `axis`
  // (in-place concats, lower/concat_in_place.h).
  bool concatenates = false;
  // Pad: output = input 0 padded by attribute `pads` (every axis' begin, then
  // every end) in attribute `mode`, with value input 2 (passes/pad_folding.h).
  bool pads_input = false;
  // Global pools: one value per image and channel over all spatial positions
  // (a target may read their input in either layout).
  bool global_pool = false;
  // Row normalizations (LayerNorm, RMSNorm): a target may have fusion compute
  // an elementwise sum of same-shape tensors in front of the kernel, which reads
  // through it (passes/fusion.h, rule 0b; the GPU holds the row in registers).
  bool reads_row_once = false;
  // Layout: rewrites the node's axis attributes for inputs that are now the
  // transposes (by `perm`, ONNX Transpose's convention) of what it read, so it
  // computes its old output transposed by `perm` (an op that drops axes: its old
  // output itself, where the axes it keeps stay in their order). false when it
  // cannot. Elementwise ops need none: they commute with transposing every operand.
  std::function<Result<bool>(ir::Node& node, const std::vector<int64_t>& perm)> permute_axes;
  // Pad folding (passes/pad_folding.h): makes the canonical node's `pads`
  // attribute (every spatial axis' begin, then every end) pad input 0 with
  // zeros that count like data, so that a zero Pad before it can join them;
  // false (node unchanged) when it cannot.
  std::function<bool(ir::Node& node)> pads_with_zeros;
  // Reduction splitting (passes/reduction_split.h): the Reduce op whose results
  // over disjoint, equally sized parts of this reduction's axes this op, run
  // over them, turns into its own result (ReduceMean of means, ReduceMax of
  // maxima, ReduceL2 of norms, ReduceSumSquare of norms, ReduceLogSum of sums);
  // empty: the node is never split.
  std::string reduction_partial;

  NormalizeFn normalize;
  CanonicalizeFn canonicalize;
  InferFn infer;
  EvaluateFn evaluate;

  ScalarFn scalar;
  InjectiveFn injective;
  KernelFn kernel;
  AloneKernelFn alone_kernel;
  ExpandFn expand;
  FoldScaleShiftFn fold_scale_shift;
  AsScaleShiftFn as_scale_shift;
  StridedViewFn strided_view;

  bool SupportsVersion(int version) const;
};

// `def.half` with kAuto resolved by the fusion class (never kAuto); `reason`
// (when not null) receives why a kKeepF32 op keeps f32.
HalfPolicy ResolveHalfPolicy(const OpDef& def, std::string* reason = nullptr);

// One kKeepF32 policy with its reason, for op definitions:
//   def.half = HalfPolicy::kKeepF32; def.keep_f32_reason = reason;
void KeepF32(OpDef& def, std::string reason);

}  // namespace keel::ops
