// compiler/ops/elementwise_math.cc — unary math and activation functions:
// Abs Neg Sign Reciprocal Floor Ceil Round Exp Log Sqrt Erf, the trigonometric
// and hyperbolic functions, Relu Sigmoid Tanh LeakyRelu Elu Selu Celu
// HardSigmoid HardSwish Softplus Softsign Mish Gelu ThresholdedRelu Shrink
// Swish, IsNaN IsInf.
//
// Each op is its scalar expression (op_def.h): the code generators and the
// reference interpreter both run it. Attributes are read once, when the
// expression is built; float formulas compute in the operand's type (f32 for
// f16/bf16, which lowering widens first).
#include <cmath>

#include "compiler/ops/elementwise_support.h"
#include "compiler/ops/op_util.h"

namespace keel::ops {
namespace {

using codegen::BinaryOp;
using codegen::Expr;
using codegen::UnaryOp;

Expr X(const ScalarArgs& a) { return a.operands[0]; }
Expr C(double v, const Expr& like) { return ConstOf(v, like.type()); }

// Unary op of `types` whose expression is `f(x, attributes)`.
void AddUnary(Registry& r, const std::string& name, std::vector<int> versions, unsigned types,
              std::function<Result<Expr>(const Expr& x, const ir::Attributes& attrs)> f,
              OutputType out = OutputType::kSameAsFirst, EpilogueRole epilogue = EpilogueRole::kNone) {
  ElementwiseSpec s;
  s.epilogue = epilogue;
  s.name = name;
  s.versions = std::move(versions);
  s.types = types;
  s.output = out;
  s.scalar = [f](const ScalarArgs& a) { return f(X(a), a.node.attrs()); };
  AddElementwise(r, std::move(s));
}

// A float function that is one kernel-IR unary op.
// `keep_f32`: why the op keeps f32 under mixed precision (empty: it may run in half).
void AddMath(Registry& r, const std::string& name, std::vector<int> versions, UnaryOp op,
             std::string keep_f32 = "") {
  ElementwiseSpec s;
  s.name = name;
  s.versions = std::move(versions);
  s.types = kFloatTypes;
  s.keep_f32_reason = std::move(keep_f32);
  s.scalar = [op](const ScalarArgs& a) -> Result<Expr> { return codegen::Unary(op, X(a)); };
  AddElementwise(r, std::move(s));
}

Expr Exp(const Expr& x) { return codegen::Unary(UnaryOp::kExp, x); }
Expr Log(const Expr& x) { return codegen::Unary(UnaryOp::kLog, x); }
Expr Tanh(const Expr& x) { return codegen::Unary(UnaryOp::kTanh, x); }
Expr Abs(const Expr& x) { return codegen::Unary(UnaryOp::kAbs, x); }
Expr IsNaN(const Expr& x) { return codegen::Binary(BinaryOp::kNe, x, x); }
// log(1 + e^x) without overflow: max(x, 0) + log(1 + e^-|x|).
Expr Softplus(const Expr& x) { return codegen::Max(x, C(0, x)) + Log(C(1, x) + Exp(-Abs(x))); }

Result<double> Float(const ir::Attributes& a, const char* name, double def) { return a.GetFloat(name, def); }

}  // namespace

void RegisterElementwiseMathOps(Registry& r) {
  // ---- plain math ----
  // exp/log map ordinary values out of f16's range (e^12 > 65504) or near zero.
  AddMath(r, "Exp", {1, 6, 13}, UnaryOp::kExp, "results leave f16's range");
  AddMath(r, "Log", {1, 6, 13}, UnaryOp::kLog, "inputs near zero lose their digits in half");
  AddMath(r, "Sqrt", {1, 6, 13}, UnaryOp::kSqrt);
  AddMath(r, "Erf", {9, 13}, UnaryOp::kErf);
  AddMath(r, "Tanh", {1, 6, 13}, UnaryOp::kTanh);
  AddMath(r, "Sigmoid", {1, 6, 13}, UnaryOp::kSigmoid);
  AddMath(r, "Floor", {1, 6, 13}, UnaryOp::kFloor);
  AddMath(r, "Ceil", {1, 6, 13}, UnaryOp::kCeil);
  AddMath(r, "Round", {11, 22}, UnaryOp::kRound);
  AddMath(r, "Sin", {7, 22}, UnaryOp::kSin);
  AddMath(r, "Cos", {7, 22}, UnaryOp::kCos);
  AddMath(r, "Tan", {7, 22}, UnaryOp::kTan);
  AddMath(r, "Asin", {7, 22}, UnaryOp::kAsin);
  AddMath(r, "Acos", {7, 22}, UnaryOp::kAcos);
  AddMath(r, "Atan", {7, 22}, UnaryOp::kAtan);
  AddMath(r, "Sinh", {9, 22}, UnaryOp::kSinh);
  AddMath(r, "Cosh", {9, 22}, UnaryOp::kCosh);
  AddMath(r, "Asinh", {9, 22}, UnaryOp::kAsinh);
  AddMath(r, "Acosh", {9, 22}, UnaryOp::kAcosh);
  AddMath(r, "Atanh", {9, 22}, UnaryOp::kAtanh);
  AddUnary(r, "Reciprocal", {1, 6, 13}, kFloatTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return C(1, x) / x; });

  // ---- numeric ----
  AddUnary(r, "Abs", {1, 6, 13}, kNumericTypes, [](const Expr& x, const ir::Attributes&) -> Result<Expr> {
    return codegen::IsUnsigned(x.type()) ? x : Abs(x);
  });
  AddUnary(r, "Neg", {1, 6, 13}, kFloatTypes | kSignedTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return -x; });
  AddUnary(r, "Sign", {9, 13}, kNumericTypes, [](const Expr& x, const ir::Attributes&) -> Result<Expr> {
    return codegen::Select(x > C(0, x), C(1, x), codegen::Select(x < C(0, x), C(-1, x), C(0, x)));
  });

  // ---- activations ----
  AddUnary(r, "Relu", {1, 6, 13, 14}, kFloatTypes | kSignedTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return codegen::Max(x, C(0, x)); },
           OutputType::kSameAsFirst, EpilogueRole::kRelu);
  AddUnary(r, "LeakyRelu", {1, 6, 16}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 0.01));
    return codegen::Select(x >= C(0, x), x, x * C(alpha, x));
  });
  AddUnary(r, "Elu", {1, 6, 22}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 1.0));
    return codegen::Select(x > C(0, x), x, C(alpha, x) * (Exp(x) - C(1, x)));
  });
  AddUnary(r, "Selu", {1, 6, 22}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 1.67326319217681884765625));
    KEEL_ASSIGN_OR_RETURN(double gamma, Float(a, "gamma", 1.05070102214813232421875));
    return C(gamma, x) * codegen::Select(x > C(0, x), x, C(alpha, x) * (Exp(x) - C(1, x)));
  });
  AddUnary(r, "Celu", {12, 28}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 1.0));
    if (alpha == 0) return InvalidArgument("Celu: alpha must not be 0");
    return codegen::Max(x, C(0, x)) + codegen::Min(C(0, x), C(alpha, x) * (Exp(x / C(alpha, x)) - C(1, x)));
  });
  AddUnary(r, "HardSigmoid", {1, 6, 22}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 0.2));
    KEEL_ASSIGN_OR_RETURN(double beta, Float(a, "beta", 0.5));
    return codegen::Min(codegen::Max(x * C(alpha, x) + C(beta, x), C(0, x)), C(1, x));
  });
  AddUnary(r, "HardSwish", {14, 22}, kFloatTypes, [](const Expr& x, const ir::Attributes&) -> Result<Expr> {
    return x * codegen::Min(codegen::Max(x * C(1.0 / 6.0, x) + C(0.5, x), C(0, x)), C(1, x));
  });
  AddUnary(r, "Softplus", {1, 22}, kFloatTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return Softplus(x); });
  AddUnary(r, "Softsign", {1, 22}, kFloatTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return x / (C(1, x) + Abs(x)); });
  AddUnary(r, "Mish", {18, 22}, kFloatTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return x * Tanh(Softplus(x)); });
  AddUnary(r, "Gelu", {20}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(std::string approx, a.GetString("approximate", "none"));
    if (approx == "tanh") {
      const double k = std::sqrt(2.0 / M_PI);
      return C(0.5, x) * x * (C(1, x) + Tanh(C(k, x) * (x + C(0.044715, x) * x * x * x)));
    }
    if (approx != "none") return InvalidArgument("Gelu: approximate='" + approx + "' (expected none or tanh)");
    return C(0.5, x) * x * (C(1, x) + codegen::Unary(UnaryOp::kErf, x * C(M_SQRT1_2, x)));
  });
  AddUnary(r, "ThresholdedRelu", {10, 22}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 1.0));
    return codegen::Select(x > C(alpha, x), x, C(0, x));
  });
  AddUnary(r, "Shrink", {9}, kNumericTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double bias, Float(a, "bias", 0.0));
    KEEL_ASSIGN_OR_RETURN(double lambd, Float(a, "lambd", 0.5));
    // Integers compare against the (possibly fractional) threshold in double.
    Expr xf = codegen::Cast(x, codegen::IsFloat(x.type()) ? x.type() : ir::DType::kF64);
    Expr lo = xf + C(bias, xf), hi = xf - C(bias, xf);
    Expr y = codegen::Select(xf < C(-lambd, xf), lo, codegen::Select(xf > C(lambd, xf), hi, C(0, xf)));
    return codegen::Cast(y, x.type());
  });
  AddUnary(r, "Swish", {24}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(double alpha, Float(a, "alpha", 1.0));
    return x * codegen::Unary(UnaryOp::kSigmoid, x * C(alpha, x));
  });

  // ---- classification ----
  AddUnary(r, "IsNaN", {9, 13, 20}, kFloatTypes,
           [](const Expr& x, const ir::Attributes&) -> Result<Expr> { return IsNaN(x); }, OutputType::kBool);
  AddUnary(r, "IsInf", {10, 20}, kFloatTypes, [](const Expr& x, const ir::Attributes& a) -> Result<Expr> {
    KEEL_ASSIGN_OR_RETURN(int64_t neg, a.GetInt("detect_negative", 1));
    KEEL_ASSIGN_OR_RETURN(int64_t pos, a.GetInt("detect_positive", 1));
    const Expr inf = C(INFINITY, x);
    Expr is_pos = codegen::Binary(BinaryOp::kEq, x, inf), is_neg = codegen::Binary(BinaryOp::kEq, x, -inf);
    if (neg && pos) return is_pos || is_neg;
    if (pos) return is_pos;
    if (neg) return is_neg;
    return codegen::IntConst(0, ir::DType::kBool);
  }, OutputType::kBool);
}

}  // namespace keel::ops
