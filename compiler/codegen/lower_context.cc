// compiler/codegen/lower_context.cc — TensorFn bookkeeping, index helpers and the
// generic loop nest used by elementwise kernels and epilogues.
#include "compiler/codegen/lower_context.h"

namespace keel::codegen {

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NodeLabel(const ir::Node& node) { return node.op_type() + " '" + node.name() + "'"; }

const TensorFn* LowerContext::Find(const ir::Value* v) const {
  auto it = fns_.find(v);
  return it == fns_.end() ? nullptr : &it->second;
}

Status LowerContext::DefineConstant(const ir::Value* v) {
  const ir::TensorData& data = *v->constant();
  if (!IsSupportedKernelDType(data.type.dtype))
    return Unsupported("constant " + v->name() + " has dtype " + ir::DTypeName(data.type.dtype));
  // Named by order within the kernel (not by value id): identical kernels print identically (kernel_dedup.h).
  std::string name = IndexedName("c", num_constants_++);
  int buf = kernel_.AddConstant(name, data.type.dtype, data.type.shape, data.bytes);
  TensorFn fn;
  fn.type = data.type;
  fn.buffer = buf;
  KernelFunc* k = &kernel_;
  fn.at = [k, buf](const std::vector<Expr>& idx) { return k->Load(buf, idx); };
  Define(v, std::move(fn));
  return Status::Ok();
}

Result<const TensorFn*> LowerContext::Input(const ir::Node& node, size_t i) const {
  const ir::Value* v = node.input(i);
  if (!v) return InvalidArgument(NodeLabel(node) + ": input " + std::to_string(i) + " is missing");
  const TensorFn* fn = Find(v);
  if (!fn) return Internal(NodeLabel(node) + ": input " + std::to_string(i) + " has no reader");
  return fn;
}

std::vector<Expr> BroadcastIndex(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                                 const std::vector<Expr>& idx) {
  std::vector<Expr> r(in.size());
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) r[i] = in[i] == 1 ? Expr(0) : idx[off + i];
  return r;
}

Expr Linearize(const std::vector<int64_t>& shape, const std::vector<Expr>& idx) {
  Expr flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + idx[i];
  return flat;
}

std::vector<Expr> Delinearize(const std::vector<int64_t>& shape, Expr flat) {
  std::vector<Expr> idx(shape.size());
  int64_t inner = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    Expr q = inner == 1 ? flat : flat / inner;
    idx[i] = i == 0 ? q : (shape[i] == 1 ? Expr(0) : q % shape[i]);
    inner *= shape[i];
  }
  return idx;
}

std::vector<int64_t> DelinearizeConst(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

Stmt LoopNest(LowerContext& ctx, const std::vector<int64_t>& shape,
              const std::function<Stmt(const std::vector<Expr>&)>& body) {
  KernelFunc& k = ctx.kernel();
  if (shape.empty()) return body({});
  std::vector<int64_t> rows_shape(shape.begin(), shape.end() - 1);
  int64_t rows = NumElements(rows_shape);
  bool parallel = NumElements(shape) >= ctx.options().min_parallel_elements && rows > 1;
  Expr r = k.NewVar("r");
  Expr j = k.NewVar("j");
  std::vector<Expr> idx = Delinearize(rows_shape, r);
  idx.push_back(j);
  Stmt inner = For(j, 0, shape.back(), LoopKind::kVectorize, body(idx));
  return For(r, 0, rows, parallel ? LoopKind::kParallel : LoopKind::kSerial, inner);
}

}  // namespace keel::codegen
