// compiler/passes/mixed_precision.cc — the mixed-precision pass (see the header).
#include "compiler/passes/mixed_precision.h"

#include <cstring>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/semantics.h"

namespace keel::passes {

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

Result<Precision> ParsePrecision(const std::string& text) {
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kFp16, Precision::kBf16}) {
    if (text == PrecisionName(p)) return p;
  }
  return InvalidArgument("unknown precision '" + text + "' (expected fp32, tf32, fp16 or bf16)");
}

ir::DType HalfDType(Precision precision) {
  switch (precision) {
    case Precision::kFp16: return ir::DType::kF16;
    case Precision::kBf16: return ir::DType::kBF16;
    default: return ir::DType::kF32;
  }
}

namespace {

using ir::DType;
using ir::DTypeName;
using ir::Node;
using ir::Value;

bool IsF32(const Value* v) { return v != nullptr && v->has_type() && v->type().dtype == DType::kF32; }

// One run of the pass over one graph.
class Rewriter {
 public:
  Rewriter(ir::Graph& graph, const MixedPrecisionOptions& options)
      : g_(graph), options_(options), half_(HalfDType(options.precision)) {}

  Result<MixedPrecisionReport> Run() {
    report_.precision = options_.precision;
    report_.half_io = options_.half_io;
    if (half_ == DType::kF32) return report_;
    if (options_.half_io) {
      for (Value* in : g_.inputs()) {
        if (!IsF32(in)) continue;
        in->set_type({half_, in->type().shape});
        converted_.insert(in);
      }
    }
    if (half_ == DType::kBF16) KEEL_RETURN_IF_ERROR(FindF32Stream());
    // A snapshot: the casts this pass inserts are not visited.
    for (Node* node : g_.nodes()) KEEL_RETURN_IF_ERROR(Visit(node));
    FixOutputs();
    RemoveUnusedCasts();
    g_.RemoveDeadValues();
    Count();
    return report_;
  }

 private:
  Status Visit(Node* node) {
    const ops::OpDef* def = ops::FindOp(*node);
    bool touches_f32 = false;
    bool input_converted = false;
    for (Value* in : node->inputs()) {
      touches_f32 = touches_f32 || IsF32(in) || converted_.count(in);
      input_converted = input_converted || converted_.count(in);
    }
    for (Value* out : node->outputs()) touches_f32 = touches_f32 || IsF32(out);
    if (!touches_f32) return Status::Ok();  // integer, bool, f64 or already-half data
    std::string reason;
    ops::HalfPolicy policy = def ? ops::ResolveHalfPolicy(*def, &reason) : ops::HalfPolicy::kKeepF32;
    if (!def) reason = "unknown op";
    if (node->body() || !node->subgraphs().empty()) {
      policy = ops::HalfPolicy::kKeepF32;
      reason = "has a subgraph";
    }
    if (policy == ops::HalfPolicy::kHalf && stream_.count(node)) {
      policy = ops::HalfPolicy::kKeepF32;
      reason = "bf16: the residual stream before a normalization stays f32";
    }
    if (policy == ops::HalfPolicy::kHalf) {
      KEEL_ASSIGN_OR_RETURN(bool done, TryHalf(node));
      if (done) {
        TanhGelu(node);
        return Status::Ok();
      }
      reason = "its type rule refuses half operands";
    } else if (policy == ops::HalfPolicy::kUntouched) {
      // The node keeps its operands; only result types that follow an operand
      // this pass converted change (CastLike to a half value).
      if (!input_converted) return Status::Ok();
      KEEL_ASSIGN_OR_RETURN(bool done, Retype(node, node->inputs()));
      if (done) return Status::Ok();
      reason = "its type rule refuses half operands";
    }
    // f32: every operand this pass turned into half is cast back (exactly).
    for (size_t i = 0; i < node->inputs().size(); ++i) {
      Value* in = node->input(i);
      if (in && converted_.count(in)) node->SetInput(i, F32Of(in, node));
    }
    Kept(node->op_type(), reason);
    return Status::Ok();
  }

  // bf16 keeps the residual stream in f32 (stream_; why: the header). A
  // residual sum stored in bf16 between blocks is rounded once per block, and
  // every later block adds onto the rounded value. f16 keeps three more bits
  // and its bandwidth.
  //  - An elementwise node whose result a keep-f32 node other than a softmax
  //    reads and that flows on past it (a pre-norm block's residual Add, read
  //    by the next LayerNorm and the next residual Add) stays f32: its kernel
  //    computes in f32 anyway. A post-norm block's Add feeds only its
  //    LayerNorm, whose f32 result is the carried value already. (Softmax
  //    inputs are not a stream, and the attention pattern over them stays half.)
  //  - So does an elementwise node that reads a constant (a bias Add), or a
  //    reshape/transpose of one value, whose every reader is in the stream: the
  //    GEMM before them then writes f32 with an f32 bias in cuBLASLt's
  //    epilogue (fusion.h, cuda_backend.cc).
  //  - A Gemm with a bias operand (beta 1) whose every reader is in the stream
  //    becomes a Gemm and a bias Add, for the same reason (cuBLASLt takes no
  //    half bias with an f32 result).
  bool IsHalfElementwise(const Node* n) const {
    const ops::OpDef* def = ops::FindOp(*n);
    return def && def->fusion == ops::FusionClass::kElementwise && !n->body() &&
           ops::ResolveHalfPolicy(*def) == ops::HalfPolicy::kHalf;
  }
  bool CarriesPastNormalization(const Node* n) const {
    if (!IsHalfElementwise(n)) return false;
    bool normalized = false, carried = false;
    for (const Value* out : n->outputs()) {
      if (!IsF32(out)) continue;
      for (const Value::Use& use : out->uses()) {
        const ops::OpDef* def = ops::FindOp(*use.node);
        const bool f32 = def && ops::ResolveHalfPolicy(*def) == ops::HalfPolicy::kKeepF32;
        if (f32 && def->pattern_role != ops::PatternRole::kSoftmax) normalized = true;
        if (!f32) carried = true;
      }
    }
    return normalized && carried;
  }
  bool AllReadersIn(const Node* n, const std::unordered_set<const Node*>& set) const {
    bool any = false;
    for (const Value* out : n->outputs()) {
      if (g_.IsGraphOutput(out)) return false;
      for (const Value::Use& use : out->uses()) {
        if (!set.count(use.node)) return false;
        any = true;
      }
    }
    return any;
  }
  Status FindF32Stream() {
    for (Node* n : g_.nodes()) {
      if (CarriesPastNormalization(n)) stream_.insert(n);
    }
    if (stream_.empty()) return Status::Ok();
    const std::vector<Node*> order = g_.nodes();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      if (stream_.count(n) || !AllReadersIn(n, stream_)) continue;
      if (AddsConstant(n) || MovesOneValue(n)) stream_.insert(n);
    }
    std::vector<Node*> gemms;
    for (Node* n : g_.nodes()) {
      const ops::OpDef* def = ops::FindOp(*n);
      if (def && def->library == ops::LibraryCall::kGemm && n->inputs().size() > 2 && n->input(2) &&
          IsF32(n->output(0)) && AllReadersIn(n, stream_)) {
        gemms.push_back(n);
      }
    }
    for (Node* gemm : gemms) KEEL_RETURN_IF_ERROR(SplitGemmBias(gemm));
    return Status::Ok();
  }
  // A half elementwise node reading an f32 constant (a bias).
  bool AddsConstant(const Node* n) const {
    if (!IsHalfElementwise(n)) return false;
    for (const Value* in : n->inputs()) {
      if (in && in->is_constant() && IsF32(in)) return true;
    }
    return false;
  }
  // A half data-movement node (view or injective) of one non-constant f32
  // value: the stream's reshapes and transposes between a GEMM and its add.
  bool MovesOneValue(const Node* n) const {
    const ops::OpDef* def = ops::FindOp(*n);
    if (!def || n->body() || (def->fusion != ops::FusionClass::kInjective && def->fusion != ops::FusionClass::kView) ||
        ops::ResolveHalfPolicy(*def) != ops::HalfPolicy::kHalf || n->outputs().size() != 1 || !IsF32(n->output(0))) {
      return false;
    }
    int values = 0;
    for (const Value* in : n->inputs()) values += in && !in->is_constant() && IsF32(in);
    return values == 1;
  }
  // Gemm(A, B, C) with beta 1 -> Add(Gemm(A, B), C); the Add joins the stream.
  Status SplitGemmBias(Node* gemm) {
    KEEL_ASSIGN_OR_RETURN(const double beta, gemm->attrs().GetFloat("beta", 1.0));
    if (beta != 1.0) return Status::Ok();
    Value* y = gemm->output(0);
    Node* product = g_.InsertNodeBefore(gemm, gemm->op_type(), gemm->name() + ".product",
                                        {gemm->input(0), gemm->input(1)}, 1);
    for (const auto& [k, v] : gemm->attrs().all()) {
      if (k != "beta") product->attrs().Set(k, v);
    }
    product->output(0)->set_name(y->name() + ".product");
    product->output(0)->set_type(y->type());
    Node* bias = g_.InsertNodeBefore(gemm, "Add", gemm->name() + ".bias", {product->output(0), gemm->input(2)}, 1);
    bias->output(0)->set_type(y->type());
    g_.ReplaceAllUsesWith(y, bias->output(0));
    const std::string name = y->name();
    y->set_name(name + ".unsplit");
    bias->output(0)->set_name(name);
    KEEL_RETURN_IF_ERROR(g_.RemoveNode(gemm));
    stream_.insert(bias);
    return Status::Ok();
  }

  // A half Gelu computes its tanh form (see the file comment in the header).
  void TanhGelu(Node* node) {
    if (node->op_type() != "Gelu") return;
    const Result<std::string> approx = node->attrs().GetString("approximate", "none");
    if (!approx.ok() || *approx != "none") return;
    node->attrs().Set("approximate", std::string("tanh"));
    ++report_.tanh_gelu;
  }

  void Kept(const std::string& op, const std::string& reason) {
    MixedPrecisionReport::Kept& k = report_.kept_f32[op];
    ++k.nodes;
    if (k.reason.empty()) k.reason = reason;
  }

  // A kHalf node: f32 operands to half, results re-typed. false (node unchanged)
  // when its type rule does not take the half operands.
  Result<bool> TryHalf(Node* node) {
    std::vector<Value*> inputs = node->inputs();
    for (Value*& in : inputs) {
      if (IsF32(in)) in = HalfOf(in, node);
    }
    return Retype(node, inputs);
  }

  // Sets `inputs` and re-runs the node's type rule: results may only move from
  // f32 to half, everything else must stay. Restores the old inputs and
  // returns false when the rule fails or disagrees.
  Result<bool> Retype(Node* node, const std::vector<Value*>& inputs) {
    const std::vector<Value*> old = node->inputs();
    node->SetInputs(inputs);
    auto types = ops::InferNodeTypes(*node);
    bool ok = types.ok() && types->size() == node->outputs().size();
    for (size_t i = 0; ok && i < types->size(); ++i) {
      const ir::TensorType& was = node->output(i)->type();
      const ir::TensorType& now = (*types)[i];
      ok = now.shape == was.shape && (now.dtype == was.dtype || (was.dtype == DType::kF32 && now.dtype == half_));
    }
    if (!ok) {
      node->SetInputs(old);
      return false;
    }
    for (size_t i = 0; i < types->size(); ++i) {
      Value* out = node->output(i);
      if (out->type().dtype == (*types)[i].dtype) continue;
      out->set_type((*types)[i]);
      converted_.insert(out);
    }
    return true;
  }

  // The half twin of an f32 value: a converted constant, the half value a
  // cast-back came from, or a Cast placed before `consumer` (shared).
  Value* HalfOf(Value* v, Node* consumer) {
    auto it = half_of_.find(v);
    if (it != half_of_.end()) return it->second;
    auto back = cast_back_source_.find(v);
    if (back != cast_back_source_.end()) return back->second;
    Value* twin = nullptr;
    if (v->is_constant()) {
      twin = g_.AddConstant(v->name() + "." + DTypeName(half_), ConvertConstant(*v->constant()));
    } else {
      twin = InsertCast(v, half_, consumer);
    }
    half_of_[v] = twin;
    twins_.insert(twin);
    return twin;
  }

  // The f32 twin of a value this pass converted (a shared Cast placed before
  // `consumer`, or at the end of the graph when null).
  Value* F32Of(Value* v, Node* consumer) {
    auto it = f32_of_.find(v);
    if (it != f32_of_.end()) return it->second;
    Value* twin = InsertCast(v, DType::kF32, consumer);
    f32_of_[v] = twin;
    cast_back_source_[twin] = v;
    return twin;
  }

  Value* InsertCast(Value* v, DType to, Node* before) {
    const std::string name = v->name() + "." + DTypeName(to);
    Node* cast = before ? g_.InsertNodeBefore(before, "Cast", name, {v}, 1) : g_.AddNode("Cast", name, {v}, 1);
    cast->attrs().Set("to", std::string(DTypeName(to)));
    Value* out = cast->output(0);
    out->set_name(name);
    out->set_type({to, v->type().shape});
    casts_.push_back(cast);
    return out;
  }

  ir::TensorDataPtr ConvertConstant(const ir::TensorData& data) {
    auto out = ops::NewTensor({half_, data.type.shape});
    const int64_t n = data.type.NumElements();
    const float* src = data.data<float>();
    auto* dst = reinterpret_cast<uint16_t*>(out->bytes.data());
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = half_ == DType::kF16 ? ops::FloatToHalf(src[i]) : ops::FloatToBFloat16(src[i]);
    }
    return out;
  }

  // Model outputs keep the model's f32: one the pass turned into half gets its
  // f32 value back. With half_io every f32 output becomes half instead (an
  // output of a keep-f32 op is cast). The replacement takes the output's name
  // (the name is the output's identity for callers).
  void FixOutputs() {
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      Value* out = g_.outputs()[i];
      Value* twin = nullptr;
      if (!options_.half_io && converted_.count(out)) twin = F32Of(out, nullptr);
      if (options_.half_io && IsF32(out)) twin = HalfOf(out, nullptr);
      if (twin == nullptr) continue;
      if (twin->name() != out->name()) {
        const std::string name = out->name();
        out->set_name(name + "." + DTypeName(out->type().dtype));
        twin->set_name(name);
      }
      g_.SetOutput(i, twin);
    }
  }

  // Casts made for a node whose type rule then refused half operands.
  void RemoveUnusedCasts() {
    for (auto it = casts_.rbegin(); it != casts_.rend(); ++it) {
      Node* cast = *it;
      if (cast->output(0)->uses().empty() && !g_.IsGraphOutput(cast->output(0))) {
        (void)g_.RemoveNode(cast);  // cannot fail: checked above
      } else {
        ++report_.casts;
      }
    }
  }

  void Count() {
    std::unordered_set<const Value*> outputs(g_.outputs().begin(), g_.outputs().end());
    for (const Value* v : g_.values()) {
      if (!v->has_type() || (v->uses().empty() && !outputs.count(v))) continue;
      const DType d = v->type().dtype;
      if (d != half_ && d != DType::kF32) continue;
      const int64_t bytes = v->type().ByteSize();
      const bool half = d == half_ && (converted_.count(v) || twins_.count(v));
      if (d == half_ && !half) continue;  // the model's own half data
      if (v->is_constant()) {
        (half ? report_.half_constants : report_.f32_constants) += 1;
        (half ? report_.half_constant_bytes : report_.f32_constant_bytes) += bytes;
      } else {
        (half ? report_.half_activations : report_.f32_activations) += 1;
        (half ? report_.half_activation_bytes : report_.f32_activation_bytes) += bytes;
      }
    }
  }

  ir::Graph& g_;
  const MixedPrecisionOptions& options_;
  const DType half_;
  MixedPrecisionReport report_;
  std::unordered_set<const Value*> converted_;              // f32 values this pass made half
  std::unordered_map<const Value*, Value*> half_of_;        // f32 value -> half twin
  std::unordered_set<const Value*> twins_;                  // the half twins
  std::unordered_map<const Value*, Value*> f32_of_;         // converted value -> f32 twin
  std::unordered_map<const Value*, Value*> cast_back_source_;  // f32 twin -> converted value
  std::vector<Node*> casts_;                                // in creation order
  std::unordered_set<const Node*> stream_;                  // bf16: elementwise nodes kept f32 (FindF32Stream)
};

}  // namespace

Result<MixedPrecisionReport> ApplyMixedPrecision(ir::Graph& graph, const MixedPrecisionOptions& options) {
  Rewriter rewriter(graph, options);
  KEEL_ASSIGN_OR_RETURN(MixedPrecisionReport report, rewriter.Run());
  KEEL_RETURN_IF_ERROR(graph.Verify(true));
  return report;
}

Status MixedPrecisionPass::Run(ir::Graph& graph) {
  KEEL_ASSIGN_OR_RETURN(MixedPrecisionReport report, ApplyMixedPrecision(graph, options_));
  if (report_) *report_ = std::move(report);
  return Status::Ok();
}

}  // namespace keel::passes
