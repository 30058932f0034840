// compiler/ops/elementwise_binary.cc — elementwise ops of several operands:
// arithmetic (Add Sub Mul Div Pow Mod), comparisons (Equal Less LessOrEqual
// Greater GreaterOrEqual), logic (And Or Xor Not), bitwise ops (BitShift
// BitwiseAnd/Or/Xor/Not), variadic Min Max Sum Mean, Where, Clip, PRelu and
// the conversions Cast and CastLike, plus Identity.
//
// All broadcast numpy-style (PRelu's slope broadcasts to X). Integer division
// truncates toward zero; Mod follows the sign of the divisor unless fmod=1
// (C fmod: sign of the dividend); integer division or Mod by zero gives 0
// instead of trapping (the kernels guard it). Float Min/Max propagate NaN.
#include <cmath>
#include <limits>

#include "compiler/ops/elementwise_support.h"
#include "compiler/ops/op_util.h"

namespace keel::ops {
namespace {

using codegen::BinaryOp;
using codegen::Expr;

Expr C(double v, const Expr& like) { return ConstOf(v, like.type()); }
Expr IsNaN(const Expr& x) { return codegen::Binary(BinaryOp::kNe, x, x); }

// A binary op x <op> y on operands of one dtype.
void AddBinary(Registry& r, const std::string& name, std::vector<int> versions, unsigned types, OutputType out,
               bool commutative, std::function<Result<Expr>(const Expr&, const Expr&, const ir::Node&)> f,
               EpilogueRole epilogue = EpilogueRole::kNone) {
  ElementwiseSpec s;
  s.epilogue = epilogue;
  s.name = name;
  s.versions = std::move(versions);
  s.types = types;
  s.output = out;
  s.min_inputs = s.max_inputs = 2;
  s.commutative = commutative;
  s.scalar = [f](const ScalarArgs& a) { return f(a.operands[0], a.operands[1], a.node); };
  AddElementwise(r, std::move(s));
}

// Integer division with a zero divisor guarded (gives 0).
Expr SafeDivisor(const Expr& y) { return codegen::Select(codegen::Binary(BinaryOp::kEq, y, C(0, y)), C(1, y), y); }

Expr NanMax(const Expr& a, const Expr& b, bool is_max) {
  Expr pick = is_max ? a > b : a < b;
  if (codegen::IsFloat(a.type())) pick = pick || IsNaN(a);
  return codegen::Select(pick, a, b);
}

// Min/Max/Sum/Mean over 1..N broadcast operands.
void AddVariadic(Registry& r, const std::string& name, std::vector<int> versions, unsigned types,
                 std::function<Expr(const Expr&, const Expr&)> combine, bool mean) {
  ElementwiseSpec s;
  s.name = name;
  s.versions = std::move(versions);
  s.types = types;
  s.min_inputs = 1;
  s.max_inputs = 1 << 20;
  s.commutative = true;
  s.scalar = [combine, mean](const ScalarArgs& a) -> Result<Expr> {
    Expr acc;
    size_t n = 0;
    for (const Expr& x : a.operands) {
      if (x.is_null()) continue;
      acc = acc.is_null() ? x : combine(acc, x);
      ++n;
    }
    if (mean) acc = acc / C(static_cast<double>(n), acc);
    return acc;
  };
  AddElementwise(r, std::move(s));
}

Result<ir::DType> CastTarget(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(std::string to, node.attrs().GetString("to", ""));
  auto d = DTypeFromName(to);
  if (!d.ok()) return NodeError(node, "unknown target dtype '" + to + "'");
  return *d;
}

}  // namespace

void RegisterElementwiseBinaryOps(Registry& r) {
  // ---- arithmetic ----
  AddBinary(r, "Add", {1, 6, 7, 13, 14}, kNumericTypes, OutputType::kSameAsFirst, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x + y; }, EpilogueRole::kAdd);
  AddBinary(r, "Sub", {1, 6, 7, 13, 14}, kNumericTypes, OutputType::kSameAsFirst, false,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x - y; });
  AddBinary(r, "Mul", {1, 6, 7, 13, 14}, kNumericTypes, OutputType::kSameAsFirst, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x * y; }, EpilogueRole::kMul);
  AddBinary(r, "Div", {1, 6, 7, 13, 14}, kNumericTypes, OutputType::kSameAsFirst, false,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> {
              if (codegen::IsFloat(x.type())) return x / y;
              return codegen::Select(codegen::Binary(BinaryOp::kEq, y, C(0, y)), C(0, x), x / SafeDivisor(y));
            },
            EpilogueRole::kDiv);
  AddBinary(r, "Mod", {10, 13, 28}, kNumericTypes, OutputType::kSameAsFirst, false,
            [](const Expr& x, const Expr& y, const ir::Node& node) -> Result<Expr> {
              KEEL_ASSIGN_OR_RETURN(int64_t fmod, node.attrs().GetInt("fmod", 0));
              if (codegen::IsFloat(x.type())) {
                Expr rem = x % y;  // C fmod: the dividend's sign
                if (fmod) return rem;
                // fmod=0 (allowed for floats since opset 28): the divisor's sign, as numpy.mod.
                Expr adjust = codegen::Binary(BinaryOp::kNe, rem, C(0, rem)) && codegen::Binary(BinaryOp::kNe, rem < C(0, rem), y < C(0, y));
                return codegen::Select(adjust, rem + y, rem);
              }
              Expr zero = codegen::Binary(BinaryOp::kEq, y, C(0, y));
              Expr rem = x % SafeDivisor(y);
              if (!fmod && !codegen::IsUnsigned(x.type())) {
                // Python semantics: a non-zero remainder takes the divisor's sign.
                Expr adjust = codegen::Binary(BinaryOp::kNe, rem, C(0, rem)) && codegen::Binary(BinaryOp::kNe, rem < C(0, rem), y < C(0, y));
                rem = codegen::Select(adjust, rem + y, rem);
              }
              return codegen::Select(zero, C(0, x), rem);
            });
  {
    ElementwiseSpec s;
    s.name = "Pow";
    s.keep_f32_reason = "powers leave f16's range";
    s.versions = {1, 7, 12, 13, 15};
    s.types = kNumericTypes;
    s.same_dtype = false;  // the exponent may have another numeric type
    s.min_inputs = s.max_inputs = 2;
    s.scalar = [](const ScalarArgs& a) -> Result<Expr> {
      const Expr& x = a.operands[0];
      const Expr& y = a.operands[1];
      const ir::DType work = codegen::IsFloat(x.type()) ? x.type() : ir::DType::kF64;
      // Small constant exponents multiply (exact, and faster than pow()).
      if (y->kind == codegen::ExprKind::kFloatConst || y.IsIntConst()) {
        const double p = y->kind == codegen::ExprKind::kFloatConst ? y->float_value : static_cast<double>(y.int_value());
        if (p == 1.0) return x;
        if (p == 2.0) return x * x;
        if (p == 3.0) return x * x * x;
      }
      Expr v = codegen::Binary(BinaryOp::kPow, codegen::Cast(x, work), codegen::Cast(y, work));
      return codegen::Cast(v, x.type());
    };
    AddElementwise(r, std::move(s));
  }

  // ---- comparisons ----
  AddBinary(r, "Equal", {1, 7, 11, 13, 19}, kAllTypes, OutputType::kBool, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return codegen::Binary(BinaryOp::kEq, x, y); });
  AddBinary(r, "Less", {1, 7, 9, 13}, kNumericTypes, OutputType::kBool, false,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x < y; });
  AddBinary(r, "LessOrEqual", {12, 16}, kNumericTypes, OutputType::kBool, false,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x <= y; });
  AddBinary(r, "Greater", {1, 7, 9, 13}, kNumericTypes, OutputType::kBool, false,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x > y; });
  AddBinary(r, "GreaterOrEqual", {12, 16}, kNumericTypes, OutputType::kBool, false,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x >= y; });

  // ---- logic and bits ----
  AddBinary(r, "And", {1, 7}, kBoolType, OutputType::kBool, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x && y; });
  AddBinary(r, "Or", {1, 7}, kBoolType, OutputType::kBool, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return x || y; });
  AddBinary(r, "Xor", {1, 7}, kBoolType, OutputType::kBool, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return codegen::Binary(BinaryOp::kXor, x, y); });
  AddBinary(r, "BitwiseAnd", {18}, kIntTypes, OutputType::kSameAsFirst, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return codegen::Binary(BinaryOp::kAnd, x, y); });
  AddBinary(r, "BitwiseOr", {18}, kIntTypes, OutputType::kSameAsFirst, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return codegen::Binary(BinaryOp::kOr, x, y); });
  AddBinary(r, "BitwiseXor", {18}, kIntTypes, OutputType::kSameAsFirst, true,
            [](const Expr& x, const Expr& y, const ir::Node&) -> Result<Expr> { return codegen::Binary(BinaryOp::kXor, x, y); });
  // Signed operands since opset 28 (accepted for every version: a valid older
  // model never has them). Right shifts of signed values are arithmetic.
  AddBinary(r, "BitShift", {11, 28}, kIntTypes, OutputType::kSameAsFirst, false,
            [](const Expr& x, const Expr& y, const ir::Node& node) -> Result<Expr> {
              KEEL_ASSIGN_OR_RETURN(std::string dir, node.attrs().GetString("direction", ""));
              if (dir != "LEFT" && dir != "RIGHT") return NodeError(node, "direction must be LEFT or RIGHT, got '" + dir + "'");
              const int64_t bits = static_cast<int64_t>(keel::DataTypeSize(x.type()) * 8);
              // Shifting by a negative amount or the width or more: 0, or -1 for a
              // negative value shifted right (the hardware shift is undefined there).
              Expr in_range = y < C(static_cast<double>(bits), y);
              if (!codegen::IsUnsigned(y.type())) in_range = in_range && codegen::Binary(BinaryOp::kGe, y, C(0, y));
              Expr s = codegen::Select(in_range, y, C(0, y));
              Expr v = codegen::Binary(dir == "LEFT" ? BinaryOp::kShl : BinaryOp::kShr, x, s);
              Expr outside = C(0, x);
              if (dir == "RIGHT" && !codegen::IsUnsigned(x.type())) outside = codegen::Select(x < C(0, x), C(-1, x), outside);
              return codegen::Select(in_range, v, outside);
            });
  {
    ElementwiseSpec s;
    s.name = "Not";
    s.versions = {1};
    s.types = kBoolType;
    s.scalar = [](const ScalarArgs& a) -> Result<Expr> { return codegen::Unary(codegen::UnaryOp::kNot, a.operands[0]); };
    AddElementwise(r, s);
    s.name = "BitwiseNot";
    s.versions = {18};
    s.types = kIntTypes;
    AddElementwise(r, std::move(s));
  }

  // ---- variadic ----
  AddVariadic(r, "Max", {1, 6, 8, 12, 13}, kNumericTypes, [](const Expr& a, const Expr& b) { return NanMax(a, b, true); }, false);
  AddVariadic(r, "Min", {1, 6, 8, 12, 13}, kNumericTypes, [](const Expr& a, const Expr& b) { return NanMax(a, b, false); }, false);
  AddVariadic(r, "Sum", {1, 6, 8, 13}, kFloatTypes, [](const Expr& a, const Expr& b) { return a + b; }, false);
  AddVariadic(r, "Mean", {1, 6, 8, 13}, kFloatTypes, [](const Expr& a, const Expr& b) { return a + b; }, true);

  // ---- selection and clamping ----
  {
    ElementwiseSpec s;
    s.name = "Where";
    s.versions = {9, 16};
    s.types = kAllTypes;
    s.first_data = 1;
    s.min_inputs = s.max_inputs = 3;
    s.scalar = [](const ScalarArgs& a) -> Result<Expr> {
      return codegen::Select(codegen::Cast(a.operands[0], ir::DType::kBool), a.operands[1], a.operands[2]);
    };
    AddElementwise(r, std::move(s));
  }
  {
    ElementwiseSpec s;
    s.name = "PRelu";
    s.versions = {1, 6, 7, 9, 16};
    s.types = kFloatTypes | kSignedTypes;
    s.min_inputs = s.max_inputs = 2;
    s.scalar = [](const ScalarArgs& a) -> Result<Expr> {
      const Expr& x = a.operands[0];
      return codegen::Select(x < C(0, x), x * a.operands[1], x);
    };
    AddElementwise(r, std::move(s));
  }
  {
    // Clip: bounds are attributes before opset 11 and optional inputs since;
    // constant bounds are lifted into the attributes min/max (doubles).
    ElementwiseSpec s;
    s.name = "Clip";
    s.epilogue = EpilogueRole::kClip;
    s.versions = {1, 6, 11, 12, 13};
    s.types = kNumericTypes;
    s.min_inputs = 1;
    s.max_inputs = 3;
    s.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(LiftScalarInput(node, 2, "max"));
      KEEL_RETURN_IF_ERROR(LiftScalarInput(node, 1, "min"));
      return Status::Ok();
    };
    s.scalar = [](const ScalarArgs& a) -> Result<Expr> {
      Expr x = a.operands[0];
      const ir::Attributes& at = a.node.attrs();
      for (int side = 0; side < 2; ++side) {
        const char* attr = side == 0 ? "min" : "max";
        Expr bound;
        if (a.operands.size() > static_cast<size_t>(side + 1) && !a.operands[static_cast<size_t>(side + 1)].is_null()) {
          bound = codegen::Cast(a.operands[static_cast<size_t>(side + 1)], x.type());
        } else if (at.Has(attr)) {
          KEEL_ASSIGN_OR_RETURN(double v, at.GetFloat(attr, 0));
          if (std::isinf(v)) continue;
          bound = ConstOf(v, x.type());
        } else {
          continue;
        }
        x = side == 0 ? codegen::Max(x, bound) : codegen::Min(x, bound);
      }
      return x;
    };
    AddElementwise(r, std::move(s));
  }

  // ---- conversions and identity ----
  {
    // Cast: `to` is normalized at import to the IR dtype name ("f32"). The
    // conversion itself is the store's (elementwise outputs convert to their dtype).
    OpDef def;
    def.name = "Cast";
    def.half = HalfPolicy::kUntouched;  // its result type is its attribute
    def.pattern_role = PatternRole::kConvert;
    def.versions = {1, 6, 9, 13, 19, 21, 23, 24, 25, 28};
    def.fusion = FusionClass::kElementwise;
    def.normalize = [](ir::Node& node, int) -> Status {
      // ONNX's TensorProto code -> the IR dtype name.
      KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt("to", 0));
      auto d = DTypeFromOnnx(code);
      if (!d.ok()) return NodeUnsupported(node, "cast to " + d.status().message());
      node.attrs().Set("to", std::string(ir::DTypeName(*d)));
      return Status::Ok();
    };
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      KEEL_ASSIGN_OR_RETURN(ir::DType to, CastTarget(node));
      return One({to, InputType(node, 0).shape});
    };
    def.scalar = [](const ScalarArgs& a) -> Result<Expr> { return a.operands[0]; };
    r.Add(def);
    def.name = "CastLike";
    def.versions = {15, 19, 21, 23, 24, 25};
    def.normalize = nullptr;
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
      return One({InputType(node, 1).dtype, InputType(node, 0).shape});
    };
    // Only the data operand's value matters; the target's dtype is the output's.
    def.scalar = [](const ScalarArgs& a) -> Result<Expr> { return a.operands[0]; };
    r.Add(std::move(def));
  }
  {
    ElementwiseSpec s;
    s.name = "Identity";
    s.versions = {1, 13, 14, 16, 19, 21, 23, 24, 25};
    s.types = kAllTypes;
    s.identity_like = true;
    s.scalar = [](const ScalarArgs& a) -> Result<Expr> { return a.operands[0]; };
    AddElementwise(r, std::move(s));
  }
}

}  // namespace keel::ops
