// compiler/ops/einsum.cc — Einsum as a generic contraction anchor.
//
// The equation is parsed against the operand types into labels: letters, plus
// one label per broadcast ("...") dimension, aligned from the right as numpy
// does. Every output element is a sum, over all assignments of the labels that
// do not appear in the output, of the product of the operands read at their
// labels' values. Repeated labels in one operand (diagonals), transposes,
// reductions, outer and batched products all fall out of that one loop nest:
// one parallel loop over output elements and one serial loop over the summed
// labels (flattened). Matmul-shaped equations are correct but not blocked like
// MatMul's kernel.
// Dtypes: floats (f16/bf16 accumulate in f32) and integers.
#include <algorithm>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/lowering.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;

constexpr int kEllipsisBase = 128;  // label ids of "..." dims (letters use their char code)

struct EinsumPlan {
  std::vector<std::vector<int>> in_labels;  // per operand, per axis
  std::vector<int> out_labels;
  std::vector<int> sum_labels;  // in first-appearance order
  std::vector<int64_t> dim;     // by label id (-1: unused)
  std::vector<int64_t> out_shape;
};

// Splits a term into labels; "..." becomes `ell` (-1 marker) once.
Result<std::vector<int>> ParseTerm(const ir::Node& node, const std::string& term, bool* has_ellipsis) {
  std::vector<int> labels;
  *has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (*has_ellipsis || term.compare(i, 3, "...") != 0) return NodeError(node, "malformed ellipsis in term '" + term + "'");
      *has_ellipsis = true;
      labels.push_back(-1);
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      labels.push_back(static_cast<int>(c));
    } else {
      return NodeError(node, std::string("unexpected character '") + c + "' in the equation");
    }
  }
  return labels;
}

Result<EinsumPlan> PlanEinsum(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(std::string eq, node.attrs().GetString("equation", ""));
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  size_t start = 0;
  for (size_t i = 0; i <= lhs.size(); ++i) {
    if (i == lhs.size() || lhs[i] == ',') {
      terms.push_back(lhs.substr(start, i - start));
      start = i + 1;
    }
  }
  if (terms.size() != node.inputs().size()) {
    return NodeError(node, "equation '" + eq + "' has " + std::to_string(terms.size()) + " terms for " +
                               std::to_string(node.inputs().size()) + " inputs");
  }
  EinsumPlan p;
  p.dim.assign(kEllipsisBase + 64, -1);
  int64_t num_ell = 0;
  std::vector<std::vector<int>> raw(terms.size());
  std::vector<int64_t> ell_dims(terms.size(), 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    if (!HasInput(node, t)) return NodeError(node, "input " + std::to_string(t) + " is missing");
    bool ell = false;
    KEEL_ASSIGN_OR_RETURN(raw[t], ParseTerm(node, terms[t], &ell));
    const int64_t rank = static_cast<int64_t>(InputType(node, t).shape.size());
    const int64_t letters = static_cast<int64_t>(raw[t].size()) - (ell ? 1 : 0);
    if (rank < letters || (!ell && rank != letters)) {
      return NodeError(node, "term '" + terms[t] + "' does not match input " + std::to_string(t) + "'s rank " + std::to_string(rank));
    }
    ell_dims[t] = rank - letters;
    num_ell = std::max(num_ell, ell_dims[t]);
  }
  if (num_ell > 64) return NodeError(node, "too many broadcast dimensions");
  std::vector<int> count(p.dim.size(), 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::vector<int64_t>& shape = InputType(node, t).shape;
    std::vector<int> labels;
    for (int l : raw[t]) {
      if (l != -1) {
        labels.push_back(l);
        continue;
      }
      for (int64_t e = num_ell - ell_dims[t]; e < num_ell; ++e) labels.push_back(kEllipsisBase + static_cast<int>(e));
    }
    for (size_t a = 0; a < labels.size(); ++a) {
      const int l = labels[a];
      const int64_t d = shape[a];
      ++count[static_cast<size_t>(l)];
      int64_t& known = p.dim[static_cast<size_t>(l)];
      if (known < 0 || known == 1) {
        if (known == 1 && d != 1 && l < kEllipsisBase) {
          return NodeError(node, std::string("label '") + static_cast<char>(l) + "' has sizes 1 and " + std::to_string(d));
        }
        if (known < 0 || d != 1) known = d;
      } else if (d != known && !(d == 1 && l >= kEllipsisBase)) {
        return NodeError(node, "dimension sizes " + std::to_string(known) + " and " + std::to_string(d) + " disagree in '" + eq + "'");
      }
    }
    p.in_labels.push_back(labels);
  }
  if (arrow != std::string::npos) {
    bool ell = false;
    KEEL_ASSIGN_OR_RETURN(std::vector<int> out, ParseTerm(node, eq.substr(arrow + 2), &ell));
    for (int l : out) {
      if (l == -1) {
        for (int64_t e = 0; e < num_ell; ++e) p.out_labels.push_back(kEllipsisBase + static_cast<int>(e));
      } else {
        if (p.dim[static_cast<size_t>(l)] < 0) return NodeError(node, std::string("output label '") + static_cast<char>(l) + "' is not an input label");
        if (std::find(p.out_labels.begin(), p.out_labels.end(), l) != p.out_labels.end()) {
          return NodeError(node, std::string("output label '") + static_cast<char>(l) + "' repeats");
        }
        p.out_labels.push_back(l);
      }
    }
  } else {
    // Implicit output: the broadcast dims, then the letters used once, sorted.
    for (int64_t e = 0; e < num_ell; ++e) p.out_labels.push_back(kEllipsisBase + static_cast<int>(e));
    for (int l = 0; l < kEllipsisBase; ++l) {
      if (count[static_cast<size_t>(l)] == 1) p.out_labels.push_back(l);
    }
  }
  for (const auto& labels : p.in_labels) {
    for (int l : labels) {
      if (std::find(p.out_labels.begin(), p.out_labels.end(), l) == p.out_labels.end() &&
          std::find(p.sum_labels.begin(), p.sum_labels.end(), l) == p.sum_labels.end()) {
        p.sum_labels.push_back(l);
      }
    }
  }
  for (int l : p.out_labels) p.out_shape.push_back(p.dim[static_cast<size_t>(l)]);
  return p;
}

Result<std::vector<ir::TensorType>> InferEinsum(const ir::Node& node) {
  if (node.inputs().empty()) return NodeError(node, "has no inputs");
  const ir::DType dt = InputType(node, 0).dtype;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    if (HasInput(node, i) && InputType(node, i).dtype != dt) return NodeError(node, "inputs have different dtypes");
  }
  if (dt == ir::DType::kBool) return NodeUnsupported(node, "Einsum on bool");
  KEEL_ASSIGN_OR_RETURN(EinsumPlan p, PlanEinsum(node));
  std::vector<int64_t> sum_shape;
  for (int l : p.sum_labels) sum_shape.push_back(p.dim[static_cast<size_t>(l)]);
  KEEL_ASSIGN_OR_RETURN(int64_t o, CheckedElements(node, p.out_shape));
  KEEL_ASSIGN_OR_RETURN(int64_t s, CheckedElements(node, sum_shape));
  if (o != 0 && s > kMaxElements / o) return NodeError(node, "the contraction has more than 2^40 terms");
  return One({dt, p.out_shape});
}

Result<codegen::Stmt> LowerEinsum(codegen::LowerContext& ctx, const ir::Node& node, const codegen::StoreFn& store) {
  codegen::KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(EinsumPlan p, PlanEinsum(node));
  std::vector<const codegen::TensorFn*> ins;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    KEEL_ASSIGN_OR_RETURN(const codegen::TensorFn* fn, ctx.Input(node, i));
    ins.push_back(fn);
  }
  const ir::DType ct = ComputeType(node.output(0)->type().dtype);
  std::vector<int64_t> sum_shape;
  for (int l : p.sum_labels) sum_shape.push_back(p.dim[static_cast<size_t>(l)]);
  const int64_t O = codegen::NumElements(p.out_shape), R = codegen::NumElements(sum_shape);
  const int acc = k.AddLocal("einsum_acc", ct, {1});
  Expr t = k.NewVar("t"), rr = k.NewVar("rr");
  std::vector<Expr> oi = codegen::Delinearize(p.out_shape, t), si = codegen::Delinearize(sum_shape, rr);
  std::vector<Expr> value(p.dim.size());
  for (size_t i = 0; i < p.out_labels.size(); ++i) value[static_cast<size_t>(p.out_labels[i])] = oi[i];
  for (size_t i = 0; i < p.sum_labels.size(); ++i) value[static_cast<size_t>(p.sum_labels[i])] = si[i];
  Expr prod;
  for (size_t j = 0; j < ins.size(); ++j) {
    std::vector<Expr> idx;
    for (size_t a = 0; a < p.in_labels[j].size(); ++a) {
      // A broadcast (size-1) dimension reads index 0.
      idx.push_back(ins[j]->type.shape[a] == 1 ? Expr(0) : value[static_cast<size_t>(p.in_labels[j][a])]);
    }
    Expr v = codegen::Cast(ins[j]->at(idx), ct);
    prod = prod.is_null() ? v : prod * v;
  }
  Expr a = k.Load(acc, {Expr(0)});
  const Expr zero = codegen::IsFloat(ct) ? codegen::FloatConst(0, ct) : codegen::IntConst(0, ct);
  codegen::Stmt body = codegen::Block({
      k.Store(acc, {Expr(0)}, zero),
      codegen::For(rr, 0, R, codegen::LoopKind::kSerial, k.Store(acc, {Expr(0)}, a + prod)),
      store(oi, a),
  });
  const bool par = O > 1 && O * std::max<int64_t>(R, 1) >= ctx.options().min_parallel_elements;
  return codegen::For(t, 0, O, par ? codegen::LoopKind::kParallel : codegen::LoopKind::kSerial, body);
}

// Naive reference: every assignment of every label, accumulated in double / i64.
Result<std::vector<ir::TensorDataPtr>> EvaluateEinsum(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                      const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(EinsumPlan p, PlanEinsum(node));
  std::vector<int> labels = p.out_labels;
  labels.insert(labels.end(), p.sum_labels.begin(), p.sum_labels.end());
  std::vector<int64_t> shape;
  for (int l : labels) shape.push_back(p.dim[static_cast<size_t>(l)]);
  const int64_t total = codegen::NumElements(shape), O = out_types[0].NumElements();
  const int64_t R = O == 0 ? 0 : total / O;
  const bool is_float = IsFloatType(out_types[0].dtype);
  std::vector<double> fsum(static_cast<size_t>(O), 0.0);
  std::vector<int64_t> isum(static_cast<size_t>(O), 0);
  std::vector<int64_t> value(p.dim.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    for (size_t i = labels.size(), rest = static_cast<size_t>(flat); i-- > 0;) {
      value[static_cast<size_t>(labels[i])] = static_cast<int64_t>(rest % static_cast<size_t>(shape[i]));
      rest /= static_cast<size_t>(shape[i]);
    }
    double fp = 1;
    int64_t ip = 1;
    for (size_t j = 0; j < in.size(); ++j) {
      const std::vector<int64_t>& s = in[j]->type.shape;
      int64_t off = 0;
      for (size_t a = 0; a < s.size(); ++a) off = off * s[a] + (s[a] == 1 ? 0 : value[static_cast<size_t>(p.in_labels[j][a])]);
      if (is_float) fp *= ElementAsDouble(*in[j], off);
      else ip = static_cast<int64_t>(static_cast<uint64_t>(ip) * static_cast<uint64_t>(ElementAsInt(*in[j], off)));
    }
    const size_t o = static_cast<size_t>(R == 0 ? 0 : flat / R);
    if (is_float) fsum[o] += fp;
    else isum[o] = static_cast<int64_t>(static_cast<uint64_t>(isum[o]) + static_cast<uint64_t>(ip));
  }
  auto out = NewTensor(out_types[0]);
  for (int64_t o = 0; o < O; ++o) {
    if (is_float) StoreDouble(*out, o, fsum[static_cast<size_t>(o)]);
    else StoreInt(*out, o, isum[static_cast<size_t>(o)]);
  }
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterEinsumOps(Registry& r) {
  OpDef def;
  def.name = "Einsum";
  def.versions = {12, 28};
  def.fusion = FusionClass::kAnchor;
  def.infer = InferEinsum;
  def.evaluate = EvaluateEinsum;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return LowerEinsum(ctx, node, stores[0]);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
