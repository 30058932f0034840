// compiler/codegen/lower_context.h — state shared by the op lowerings of one
// kernel (internal to compiler/codegen).
//
// Every graph Value the kernel reads is described by a TensorFn: its type and a
// function from an output index (one i64 Expr per dimension) to the element's
// Expr. Kernel inputs load their argument buffer; elementwise and injective ops
// compose their operands' functions (nothing is materialized); an anchor's
// output is a placeholder bound to the accumulator at the store point, which is
// how epilogues fuse.
//
// Ownership: the context references the KernelFunc being built and the node;
// both must outlive it. Not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/codegen/kernel_ir.h"
#include "compiler/codegen/lower.h"
#include "compiler/ir/graph.h"

namespace keel::codegen {

using IndexFn = std::function<Expr(const std::vector<Expr>&)>;

struct TensorFn {
  ir::TensorType type;
  IndexFn at;
  int buffer = -1;  // >= 0: a plain argument buffer read with the same index
  // >= 0: the channels-first operand of a channels-last node's twin (lower.cc
  // LowerAnchor) is this plain argument buffer in channels-last order, which a
  // kernel written for that order (lower_conv_nhwc.cc) reads directly.
  int channels_last_buffer = -1;
};

// Stores the anchor's value for output index `idx` (after the epilogue).
using StoreFn = std::function<Stmt(const std::vector<Expr>& idx, Expr value)>;

class LowerContext {
 public:
  LowerContext(KernelFunc& kernel, const LowerOptions& options) : kernel_(kernel), options_(options) {}

  KernelFunc& kernel() { return kernel_; }
  const LowerOptions& options() const { return options_; }

  // Readers (lookup by pointer only; never iterated).
  const TensorFn* Find(const ir::Value* v) const;
  void Define(const ir::Value* v, TensorFn fn) { fns_[v] = std::move(fn); }
  // Defines `v` as a baked constant buffer (body-internal constants).
  Status DefineConstant(const ir::Value* v);
  // The reader of a node input; InvalidArgument when missing.
  Result<const TensorFn*> Input(const ir::Node& node, size_t i) const;

  // Set while lowering the channels-first twin of a channels-last node
  // (lower.cc LowerAnchor): the twin's output index (N, C, spatial...) is
  // stored at (N, spatial..., C), so loops that want contiguous stores run C
  // innermost.
  void set_channels_last_output(bool on) { channels_last_output_ = on; }
  bool channels_last_output() const { return channels_last_output_; }

  // Placeholder for the anchor's value at the store point.
  void set_acc(Expr acc) { acc_ = std::move(acc); }
  const Expr& acc() const { return acc_; }

 private:
  KernelFunc& kernel_;
  const LowerOptions& options_;
  std::unordered_map<const ir::Value*, TensorFn> fns_;
  int64_t num_constants_ = 0;
  bool channels_last_output_ = false;
  Expr acc_;
};

// Index of an operand of shape `in` read at output index `idx` of shape `out`
// under numpy broadcasting (dims of size 1 read index 0).
std::vector<Expr> BroadcastIndex(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                                 const std::vector<Expr>& idx);

// Flat row-major offset of idx in `shape`, and the inverse.
Expr Linearize(const std::vector<int64_t>& shape, const std::vector<Expr>& idx);
std::vector<Expr> Delinearize(const std::vector<int64_t>& shape, Expr flat);
// Delinearize of a position known at compile time: its coordinates as numbers.
std::vector<int64_t> DelinearizeConst(const std::vector<int64_t>& shape, int64_t flat);

// A loop nest over `shape`: rows (all leading dims, flattened) in a parallel loop
// when the tensor is large enough, the last dim as an inner vectorizable loop.
Stmt LoopNest(LowerContext& ctx, const std::vector<int64_t>& shape,
              const std::function<Stmt(const std::vector<Expr>&)>& body);

int64_t NumElements(const std::vector<int64_t>& shape);
std::string NodeLabel(const ir::Node& node);  // "Conv 'name'" for errors

}  // namespace keel::codegen
