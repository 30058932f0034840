// compiler/codegen/lower.cc — LowerNodeToKernel: argument list, kernel naming,
// anchor selection and epilogue fusion for plain and fused nodes.
#include "compiler/codegen/lower.h"

#include <algorithm>
#include <set>

#include "compiler/codegen/lower_context.h"
#include "compiler/codegen/lower_transpose.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/lowering.h"
#include "compiler/ops/registry.h"

namespace keel::codegen {
namespace {

// The body being lowered: a plain node seen as a one-node group.
struct GroupView {
  std::vector<const ir::Value*> inputs;   // kernel inputs (args 0..n-1)
  // What each input is bound to outside the group: a fused node's own input for its body's
  // parameter (a graph constant there is a plain value in the body), else the input itself.
  std::vector<const ir::Value*> sources;
  std::vector<const ir::Node*> nodes;     // topological order
  std::vector<const ir::Value*> outputs;  // kernel outputs
};

GroupView ViewOf(const ir::Node& node) {
  GroupView v;
  if (node.op_type() == "keel.Fused" && node.body()) {
    for (const ir::Value* in : node.body()->inputs()) v.inputs.push_back(in);
    for (size_t i = 0; i < v.inputs.size(); ++i) v.sources.push_back(i < node.inputs().size() ? node.input(i) : nullptr);
    for (const ir::Node* n : node.body()->nodes()) v.nodes.push_back(n);
    for (const ir::Value* out : node.body()->outputs()) v.outputs.push_back(out);
  } else {
    for (const ir::Value* in : node.inputs())
      if (in) v.inputs.push_back(in);
    v.sources = v.inputs;
    v.nodes.push_back(&node);
    for (const ir::Value* out : node.outputs()) v.outputs.push_back(out);
  }
  return v;
}

// An anchor's statements. A channels-last node (ops/channels_last.h) is lowered
// as its channels-first twin: the twin's inputs read the node's through the
// permutation and its stores write the node's output through it, so the op's
// one kernel lowering serves both layouts (no buffer fast paths: the reads are
// index functions).
Result<Stmt> LowerAnchor(LowerContext& ctx, const ops::OpDef& def, const ir::Node& anchor,
                         const std::vector<StoreFn>& stores, ops::OpTwin& twin) {
  if (!ops::IsChannelsLast(anchor)) return def.kernel(ctx, anchor, stores);
  KEEL_ASSIGN_OR_RETURN(twin, ops::MakeChannelsFirstTwin(def, anchor));
  for (size_t i = 0; i < anchor.outputs().size(); ++i) {
    ir::TensorType t = anchor.output(i)->type();
    if (i == 0) t.shape = ops::PermuteShape(t.shape, ops::ToChannelsFirstPerm(t.shape.size()));
    twin.twin->output(i)->set_type(t);
  }
  // Index i of a channels-last tensor is index to_last[i] of its channels-first twin.
  auto to_last = [](const std::vector<Expr>& first) {
    const std::vector<int64_t> p = ops::ToChannelsLastPerm(first.size());
    std::vector<Expr> last;
    for (int64_t a : p) last.push_back(first[static_cast<size_t>(a)]);
    return last;
  };
  for (size_t i = 0; i < anchor.inputs().size(); ++i) {
    if (!anchor.input(i)) continue;
    KEEL_ASSIGN_OR_RETURN(const TensorFn* real, ctx.Input(anchor, i));
    TensorFn fn = *real;
    fn.type = twin.twin->input(i)->type();
    if (ops::MovesOperand(def, anchor, i)) {
      fn.buffer = -1;
      fn.channels_last_buffer = real->buffer;
      fn.at = [real, to_last](const std::vector<Expr>& idx) { return real->at(to_last(idx)); };
    }
    ctx.Define(twin.twin->input(i), std::move(fn));
  }
  std::vector<StoreFn> moved = stores;
  const StoreFn store0 = stores[0];
  moved[0] = [store0, to_last](const std::vector<Expr>& idx, Expr value) { return store0(to_last(idx), value); };
  ctx.set_channels_last_output(true);
  Result<Stmt> body = def.kernel(ctx, *twin.twin, moved);
  ctx.set_channels_last_output(false);
  return body;
}

// A group that is one transpose of a kernel input, as tiles (lower_transpose.h)
// where that form applies; also one followed by elementwise ops that keep its
// output's shape (their expression applied to each tile's elements: ConvNeXt's
// transpose back to NCHW with the layer scale and the residual add, whose
// lanes otherwise gather one element from every 96th).
std::optional<Stmt> TransposeTilesOf(LowerContext& ctx, const GroupView& view, const std::vector<int>& out_bufs) {
  if (view.nodes.empty() || view.outputs.size() != 1 || out_bufs.size() != 1) return std::nullopt;
  const int out_buf = out_bufs[0];
  const ir::Node& n = *view.nodes[0];
  const ops::OpDef* def = ops::FindOp(n);
  if (!def || !def->permutes_axes || n.input(0) != view.inputs[0]) return std::nullopt;
  Result<std::vector<int64_t>> perm = n.attrs().GetInts("perm", {});
  if (!perm.ok()) return std::nullopt;
  if (view.nodes.size() == 1) {
    if (view.inputs.size() != 1) return std::nullopt;
    return TransposeInTiles(ctx, 0, out_buf, view.inputs[0]->type().shape, *perm);
  }
  for (size_t i = 1; i < view.nodes.size(); ++i) {
    const ops::OpDef* d = ops::FindOp(*view.nodes[i]);
    if (!d || d->fusion != ops::FusionClass::kElementwise) return std::nullopt;
  }
  if (view.outputs[0]->type().shape != n.output(0)->type().shape) return std::nullopt;
  const TensorFn* fn = ctx.Find(view.outputs[0]);
  if (!fn) return std::nullopt;
  return TransposeInTiles(ctx, 0, out_buf, view.inputs[0]->type().shape, *perm,
                          [fn](const std::vector<Expr>& idx) { return fn->at(idx); });
}

// A group that is one injective node with a loop nest of its own (OpDef::alone_kernel) reading a
// group input: that loop nest, where the op's form applies.
std::optional<Stmt> AloneKernelOf(LowerContext& ctx, const GroupView& view, const std::vector<int>& out_bufs) {
  if (view.nodes.size() != 1 || view.outputs.size() != 1 || out_bufs.size() != 1 || view.inputs.empty()) return std::nullopt;
  const ir::Node& n = *view.nodes[0];
  const ops::OpDef* def = ops::FindOp(n);
  if (!def || !def->alone_kernel || n.input(0) != view.inputs[0] || n.output(0) != view.outputs[0]) return std::nullopt;
  KernelFunc* k = &ctx.kernel();
  const int buf = out_bufs[0];
  return def->alone_kernel(ctx, n, [k, buf](const std::vector<Expr>& idx, Expr value) {
    return k->Store(buf, idx, Cast(value, k->buffer(buf).dtype));
  });
}

// The immediate a one-element constant input reads as (LowerOptions::inline_scalar_constants),
// or a null Expr: f32, f64, i32 and i64 values only.
Expr ScalarConstantImmediate(const ir::Value* v, const LowerOptions& options) {
  if (!options.inline_scalar_constants || !v || !v->is_constant() || NumElements(v->type().shape) != 1) return Expr();
  const ir::TensorData& data = *v->constant();
  switch (data.type.dtype) {
    case ir::DType::kF32: return FloatConst(*data.data<float>(), ir::DType::kF32);
    case ir::DType::kF64: return FloatConst(*data.data<double>(), ir::DType::kF64);
    case ir::DType::kI32: return IntConst(*data.data<int32_t>(), ir::DType::kI32);
    case ir::DType::kI64: return IntConst(*data.data<int64_t>(), ir::DType::kI64);
    default: return Expr();
  }
}

std::string Lower(std::string s) {
  std::string r;
  for (char c : s) {
    if (isalnum(static_cast<unsigned char>(c))) r += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  }
  return r;
}

}  // namespace

LowerOptions LowerOptionsForCpuFeatures(const std::string& features) {
  LowerOptions o;
  if (features.find("+avx512f") != std::string::npos) {
    // 12 rows x 2 zmm: 24 accumulators + 2 B vectors + 1 broadcast of 32 registers
    // (measured against 6x32, 8x32 and 14x32 with bench/codegen).
    o.gemm_mr = 12;
    o.gemm_mr_alt = 8;  // M = 64, 128, 512...: whole tiles
    o.gemm_nr = 32;
    o.gemm_mr_max = 14;  // 28 accumulators + 2 B vectors + 1 broadcast
    o.depthwise_plane_chains = 8;
    o.vector_registers = 32;
    // 8 rows of one 16-lane zmm accumulator each (4 chains waited on the FMA latency): ConvNeXt's
    // 7x7 layers at 56x56 took 0.90-0.92 of the time; 6, 7 and 14 rows no better (cpu29).
    o.depthwise_rows = 8;
    // ConvNeXt-T's 7x7 layers at 56x56: 0.36 -> 0.22 ms at one thread; a 5x5 at 56x56 0.17 ->
    // 0.14. A 3x3 there, and every window with AVX2 (7x7 at 56x56: 0.46 -> 0.57), lost (cpu33).
    o.depthwise_plane_wide_window_width = 64;
    // Channels-last 3x3 depthwise layers in tiles of up to 16 rows, chunk by chunk (pairs inside):
    // MobileNetV2's 14x14 layers took 0.67-0.85 of the time at one thread and 0.88-0.91 at two,
    // its 7x7 ones 0.78-0.83 at two, MnasNet's 3x3 ones 0.84-1.00 and 0.77-0.98; 8-row tiles
    // lost on MnasNet's 72 channels at 56x56 (1.07-1.11), and 5x5 windows spilled (1.9x; cpu44).
    o.depthwise_nhwc_tile_rows = 16;
    o.pointwise_pixel_rows_tail = 8;  // a quarter panel
    o.pointwise_pixel_rows_one_panel = 784;  // a 28x28 image
    o.conv_pixel_rows_one_panel = true;
    o.transpose_tile = 16;
  } else if (features.find("+avx") == std::string::npos) {
    // SSE only (16 xmm registers of 4 floats): 4 x 8 keeps 8 accumulators.
    o.gemm_mr = 4;
    o.gemm_mr_max = 4;
    o.gemm_nr = 8;
    o.transpose_tile = 4;
  }
  return o;
}

LowerOptions LowerOptionsForCuda() {
  LowerOptions o;
  o.min_parallel_elements = 1;  // a grid is never too small to launch
  o.gpu_direct_conv = true;
  o.lane_row_reductions = false;
  o.resize_rows = false;           // a CPU loop nest (measured there only)
  o.pool_padded_rows = false;      // a CPU loop nest (measured there only)
  o.gemm_panel_at_a_time = false;  // a CPU cache blocking (measured there only)
  o.gemm_first_tile_packs = false;  // a CPU packing trade-off (measured there only)
  o.gemm_prefetch_b = false;       // a CPU cache hint
  o.gemm_prefetch_c = false;       // a CPU cache hint
  o.gemm_prefetch_pack = false;    // a CPU cache hint
  o.gemm_prefetch_a_panels = false;  // a CPU cache hint
  o.gemm_merged_tail = false;        // a CPU register tile (measured there only)
  o.winograd_tile_stores = false;    // a CPU register transpose (measured there only)
  o.winograd_tile_loads = false;     // a CPU register transpose (measured there only)
  o.conv_subsample_bytes = 0;      // a CPU copy trade-off (measured there only)
  o.conv_column_phases = false;    // a CPU packing trade-off (measured there only)
  o.conv_runs_in_place = false;    // a CPU packing trade-off (measured there only)
  o.gemm_b_in_place_rows = 0;      // a CPU cache trade-off (measured there only)
  o.transpose_tile = 0;            // register tiles are a CPU form
  o.inline_scalar_constants = false;  // measured on the CPU only
  o.recurrent_rows_in_lanes = false;  // a CPU vector form (measured there only)
  return o;
}

std::string KernelName(const ir::Node& node, int64_t index) {
  std::string name = IndexedName("k", index);
  GroupView v = ViewOf(node);
  for (const ir::Node* n : v.nodes) {
    std::string op = n->op_type() == "keel.Reshape" ? "reshape" : Lower(n->op_type());
    if (op == "conv") op = "conv2d";
    if (name.size() + op.size() + 1 > 48) break;
    name += "_" + op;
  }
  return name;
}

Result<KernelSpec> LowerNodeToKernel(const ir::Node& node, int64_t index, const LowerOptions& options) {
  if (node.op_type() == "keel.Fused" && !node.body()) return InvalidArgument(NodeLabel(node) + ": fused node without body");
  GroupView view = ViewOf(node);
  std::string name = KernelName(node, index);
  auto kernel = std::make_shared<KernelFunc>(name);
  LowerContext ctx(*kernel, options);

  // Arguments: inputs, then outputs.
  for (size_t i = 0; i < view.inputs.size(); ++i) {
    const ir::Value* in = view.inputs[i];
    if (!in->has_type()) return InvalidArgument(NodeLabel(node) + ": input " + std::to_string(i) + " has no type");
    if (!IsSupportedKernelDType(in->type().dtype))
      return Unsupported(NodeLabel(node) + ": input dtype " + ir::DTypeName(in->type().dtype));
    int buf = kernel->AddArg(IndexedName("in", static_cast<int64_t>(i)), in->type().dtype, in->type().shape, ArgAccess::kRead);
    if (ctx.Find(in)) continue;  // the same value passed twice: later copies are unused arguments
    TensorFn fn;
    fn.type = in->type();
    fn.buffer = buf;
    KernelFunc* k = kernel.get();
    fn.at = [k, buf](const std::vector<Expr>& idx) { return k->Load(buf, idx); };
    if (Expr imm = ScalarConstantImmediate(view.sources[i], options); !imm.is_null()) fn.at = [imm](const std::vector<Expr>&) { return imm; };
    ctx.Define(in, std::move(fn));
  }
  std::vector<int> out_bufs;
  for (size_t i = 0; i < view.outputs.size(); ++i) {
    const ir::Value* out = view.outputs[i];
    if (!out->has_type()) return InvalidArgument(NodeLabel(node) + ": output " + std::to_string(i) + " has no type");
    if (!IsSupportedKernelDType(out->type().dtype))
      return Unsupported(NodeLabel(node) + ": output dtype " + ir::DTypeName(out->type().dtype));
    out_bufs.push_back(kernel->AddArg(IndexedName("out", static_cast<int64_t>(i)), out->type().dtype, out->type().shape, ArgAccess::kWrite));
  }

  // Walk the group: inline elementwise/injective ops, find the (single) anchor, check the epilogue.
  const ir::Node* anchor = nullptr;
  const ops::OpDef* anchor_def = nullptr;
  std::set<const ir::Value*> tainted;  // values depending on the anchor output
  std::string source;
  for (const ir::Node* n : view.nodes) {
    source += (source.empty() ? "" : "+") + n->op_type();
    const ops::OpDef* def = ops::FindOp(*n);
    if (!def) return Unsupported(NodeLabel(*n) + ": unknown op");
    for (const ir::Value* in : n->inputs()) {
      if (in && !ctx.Find(in)) {
        if (!in->is_constant()) return Internal(NodeLabel(*n) + ": input " + in->name() + " is not produced in the group");
        KEEL_RETURN_IF_ERROR(ctx.DefineConstant(in));
      }
    }
    for (const ir::Value* out : n->outputs())
      if (out && !out->has_type()) return InvalidArgument(NodeLabel(*n) + ": output has no type");
    bool depends = false;
    for (const ir::Value* in : n->inputs()) depends = depends || (in && tainted.count(in));
    if (def->fusion == ops::FusionClass::kAnchor) {
      if (anchor) return Unsupported(NodeLabel(node) + ": group has two anchors (" + anchor->op_type() + ", " + n->op_type() + ")");
      if (depends) return Internal("anchor depends on itself");
      if (!def->kernel) return Internal(NodeLabel(*n) + ": anchor op without a kernel lowering");
      if (n->outputs().size() > 1 && view.nodes.size() > 1)
        return Internal(NodeLabel(*n) + ": a multi-output op inside a fused group");
      anchor = n;
      anchor_def = def;
      tainted.insert(n->output(0));
      TensorFn fn;
      fn.type = n->output(0)->type();
      LowerContext* c = &ctx;
      fn.at = [c](const std::vector<Expr>&) { return c->acc(); };
      ctx.Define(n->output(0), std::move(fn));
      continue;
    }
    if (def->fusion == ops::FusionClass::kNone) {
      return Internal(NodeLabel(*n) + ": op " + def->name + " has no kernel" +
                      (def->removed_by.empty() ? std::string() : "; pass " + def->removed_by + " should have removed it"));
    }
    if (depends) {
      if (def->fusion != ops::FusionClass::kElementwise || n->output(0)->type().shape != anchor->output(0)->type().shape)
        return Unsupported(NodeLabel(*n) + ": epilogue op must be elementwise and keep the shape of " + NodeLabel(*anchor));
      for (const ir::Value* o : n->outputs()) if (o) tainted.insert(o);
    }
    KEEL_RETURN_IF_ERROR(ops::DefineOutputs(*def, ctx, *n));
  }

  std::vector<Stmt> stmts;
  KernelFunc* k = kernel.get();
  if (anchor) {
    std::vector<StoreFn> stores;
    if (view.nodes.size() == 1) {
      // A plain anchor node: each output stored directly.
      for (size_t i = 0; i < out_bufs.size(); ++i) {
        const int buf = out_bufs[i];
        stores.push_back([k, buf](const std::vector<Expr>& idx, Expr value) {
          return k->Store(buf, idx, Cast(value, k->buffer(buf).dtype));
        });
      }
    } else {
      for (const ir::Value* out : view.outputs)
        if (!tainted.count(out))
          return Unsupported(NodeLabel(node) + ": output " + out->name() + " does not come from the anchor's epilogue");
      std::vector<TensorFn> outs;
      for (const ir::Value* out : view.outputs) outs.push_back(*ctx.Find(out));
      LowerContext* c = &ctx;
      stores.push_back([k, c, outs, out_bufs](const std::vector<Expr>& idx, Expr value) {
        c->set_acc(value);
        std::vector<Stmt> s;
        for (size_t i = 0; i < outs.size(); ++i)
          s.push_back(k->Store(out_bufs[i], idx, Cast(outs[i].at(idx), k->buffer(out_bufs[i]).dtype)));
        return Block(std::move(s));
      });
    }
    ops::OpTwin twin;  // outlives the kernel's construction
    KEEL_ASSIGN_OR_RETURN(Stmt body, LowerAnchor(ctx, *anchor_def, *anchor, stores, twin));
    stmts.push_back(body);
  } else if (std::optional<Stmt> alone = AloneKernelOf(ctx, view, out_bufs)) {
    stmts.push_back(*alone);
  } else if (std::optional<Stmt> tiles = TransposeTilesOf(ctx, view, out_bufs)) {
    stmts.push_back(*tiles);
  } else {
    for (size_t i = 0; i < view.outputs.size(); ++i) {
      const TensorFn* fn = ctx.Find(view.outputs[i]);
      if (!fn) return Internal("output without a reader");
      const int buf = out_bufs[i];
      stmts.push_back(LoopNest(ctx, fn->type.shape, [k, fn, buf](const std::vector<Expr>& idx) {
        return k->Store(buf, idx, Cast(fn->at(idx), k->buffer(buf).dtype));
      }));
    }
  }
  kernel->set_body(Block(std::move(stmts)));
  KEEL_RETURN_IF_ERROR(kernel->Verify());

  KernelSpec spec;
  spec.name = name;
  spec.args = kernel->args();
  spec.num_inputs = static_cast<int>(view.inputs.size());
  spec.workspace_bytes = kernel->workspace_bytes();
  spec.source = source;
  spec.kernel = kernel;
  return spec;
}

}  // namespace keel::codegen
