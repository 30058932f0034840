// compiler/ops/reference.cc — element access, index helpers and the reference
// interpreter (see reference.h).
#include "compiler/ops/reference.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "compiler/ops/lowering.h"
#include "compiler/ops/op_def.h"
#include "compiler/ops/op_util.h"

namespace keel::ops {

using codegen::Expr;
using codegen::ExprKind;
using codegen::ExprNode;
using ir::DType;

// ---- f16 / bf16 -------------------------------------------------------------------------

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: normalize.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    bits = sign | (static_cast<uint32_t>(112 - e) << 23) | ((mant & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00 | (abs > 0x7F800000u ? 0x200 : 0));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Result is subnormal (or zero): value / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // < 2^-25: rounds to 0
    const uint32_t exp = abs >> 23;                       // biased, <= 112 here
    const uint32_t mant = (abs & 0x7FFFFF) | 0x800000;    // 24-bit significand
    const uint32_t shift = 126 - exp;                     // in [14, 24]
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;      // may carry into the smallest normal: still right
    return static_cast<uint16_t>(sign | q);
  }
  // Normal: re-bias the exponent, round the mantissa to 10 bits (nearest even).
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

// ---- element access -------------------------------------------------------------------------

namespace {

template <typename T>
T Get(const ir::TensorData& t, int64_t i) {
  T v;
  std::memcpy(&v, t.bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void Put(ir::TensorData& t, int64_t i, T v) {
  std::memcpy(t.bytes.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
}

// Wraps a 64-bit integer to `dtype`'s width (sign- or zero-extended back).
int64_t WrapTo(DType dtype, int64_t v) {
  switch (dtype) {
    case DType::kI8: return static_cast<int8_t>(v);
    case DType::kI16: return static_cast<int16_t>(v);
    case DType::kI32: return static_cast<int32_t>(v);
    case DType::kU8: return static_cast<uint8_t>(v);
    case DType::kU16: return static_cast<uint16_t>(v);
    case DType::kU32: return static_cast<uint32_t>(v);
    case DType::kBool: return v != 0 ? 1 : 0;
    default: return v;  // i64, u64 (bits)
  }
}

// A float value truncated toward zero into integer `dtype` (NaN -> 0, saturating).
int64_t FloatToInt(DType dtype, double v) {
  if (dtype == DType::kBool) return v != 0 ? 1 : 0;
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  double lo = 0, hi = 0;
  switch (dtype) {
    case DType::kI8: lo = -128; hi = 127; break;
    case DType::kI16: lo = -32768; hi = 32767; break;
    case DType::kI32: lo = -2147483648.0; hi = 2147483647.0; break;
    case DType::kI64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
    case DType::kU8: hi = 255; break;
    case DType::kU16: hi = 65535; break;
    case DType::kU32: hi = 4294967295.0; break;
    case DType::kU64: hi = 18446744073709551615.0; break;
    default: break;
  }
  if (v <= lo) v = lo;
  if (v >= hi) {
    if (dtype == DType::kI64) return std::numeric_limits<int64_t>::max();
    if (dtype == DType::kU64) return -1;  // all bits set
    v = hi;
  }
  if (dtype == DType::kU64) return static_cast<int64_t>(static_cast<uint64_t>(v));
  return static_cast<int64_t>(v);
}

// A double rounded to float dtype `dtype` (and back to double).
double RoundToFloat(DType dtype, double v) {
  switch (dtype) {
    case DType::kF32: return static_cast<float>(v);
    case DType::kF16: return HalfToFloat(FloatToHalf(static_cast<float>(v)));
    case DType::kBF16: return BFloat16ToFloat(FloatToBFloat16(static_cast<float>(v)));
    default: return v;
  }
}

double IntToDouble(DType dtype, int64_t v) {
  return dtype == DType::kU64 ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

}  // namespace

double ElementAsDouble(const ir::TensorData& t, int64_t i) {
  switch (t.type.dtype) {
    case DType::kF32: return Get<float>(t, i);
    case DType::kF64: return Get<double>(t, i);
    case DType::kF16: return HalfToFloat(Get<uint16_t>(t, i));
    case DType::kBF16: return BFloat16ToFloat(Get<uint16_t>(t, i));
    default: return IntToDouble(t.type.dtype, ElementAsInt(t, i));
  }
}

int64_t ElementAsInt(const ir::TensorData& t, int64_t i) {
  switch (t.type.dtype) {
    case DType::kI8: return Get<int8_t>(t, i);
    case DType::kI16: return Get<int16_t>(t, i);
    case DType::kI32: return Get<int32_t>(t, i);
    case DType::kI64: return Get<int64_t>(t, i);
    case DType::kU8: return Get<uint8_t>(t, i);
    case DType::kU16: return Get<uint16_t>(t, i);
    case DType::kU32: return Get<uint32_t>(t, i);
    case DType::kU64: return static_cast<int64_t>(Get<uint64_t>(t, i));
    case DType::kBool: return Get<uint8_t>(t, i) != 0 ? 1 : 0;
    default: return FloatToInt(DType::kI64, ElementAsDouble(t, i));
  }
}

void StoreInt(ir::TensorData& t, int64_t i, int64_t v) {
  const DType d = t.type.dtype;
  if (IsFloatType(d)) {
    StoreDouble(t, i, static_cast<double>(v));
    return;
  }
  v = WrapTo(d, v);
  switch (keel::DataTypeSize(d)) {
    case 1: Put<uint8_t>(t, i, static_cast<uint8_t>(v)); break;
    case 2: Put<uint16_t>(t, i, static_cast<uint16_t>(v)); break;
    case 4: Put<uint32_t>(t, i, static_cast<uint32_t>(v)); break;
    default: Put<uint64_t>(t, i, static_cast<uint64_t>(v)); break;
  }
}

void StoreDouble(ir::TensorData& t, int64_t i, double v) {
  switch (t.type.dtype) {
    case DType::kF32: Put<float>(t, i, static_cast<float>(v)); return;
    case DType::kF64: Put<double>(t, i, v); return;
    case DType::kF16: Put<uint16_t>(t, i, FloatToHalf(static_cast<float>(v))); return;
    case DType::kBF16: Put<uint16_t>(t, i, FloatToBFloat16(static_cast<float>(v))); return;
    default: StoreInt(t, i, FloatToInt(t.type.dtype, v)); return;
  }
}

std::shared_ptr<ir::TensorData> NewTensor(const ir::TensorType& type) {
  auto t = std::make_shared<ir::TensorData>();
  t->type = type;
  t->bytes.assign(static_cast<size_t>(type.ByteSize()), 0);
  return t;
}

std::vector<double> TensorToDoubles(const ir::TensorData& t) {
  const int64_t n = t.type.NumElements();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = ElementAsDouble(t, i);
  return v;
}

Result<ir::TensorDataPtr> TensorFromDoubles(const ir::TensorType& type, const std::vector<double>& values) {
  if (static_cast<int64_t>(values.size()) != type.NumElements()) {
    return Internal("TensorFromDoubles: " + std::to_string(values.size()) + " values for " + type.ToString());
  }
  auto t = NewTensor(type);
  for (size_t i = 0; i < values.size(); ++i) StoreDouble(*t, static_cast<int64_t>(i), values[i]);
  return ir::TensorDataPtr(std::move(t));
}

ir::TensorDataPtr MakeTensorF32(std::vector<int64_t> shape, const std::vector<float>& values) {
  auto t = NewTensor({DType::kF32, std::move(shape)});
  if (!values.empty()) std::memcpy(t->bytes.data(), values.data(), std::min(t->bytes.size(), values.size() * 4));
  return t;
}

ir::TensorDataPtr MakeTensorI64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  auto t = NewTensor({DType::kI64, std::move(shape)});
  if (!values.empty()) std::memcpy(t->bytes.data(), values.data(), std::min(t->bytes.size(), values.size() * 8));
  return t;
}

// ---- index helpers -----------------------------------------------------------------------------

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, size_t out_rank) {
  const std::vector<int64_t> st = Strides(in);
  std::vector<int64_t> out(out_rank, 0);
  const size_t off = out_rank - in.size();
  for (size_t i = 0; i < in.size(); ++i) out[off + i] = in[i] == 1 ? 0 : st[i];
  return out;
}

int64_t StridedOffset(int64_t idx, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& in_strides) {
  int64_t off = 0;
  for (size_t d = out_shape.size(); d-- > 0;) {
    const int64_t dim = out_shape[d];
    if (dim == 0) return 0;
    off += (idx % dim) * in_strides[d];
    idx /= dim;
  }
  return off;
}

void SplitAxis(const std::vector<int64_t>& shape, int64_t axis, int64_t& outer, int64_t& len, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  len = shape[static_cast<size_t>(axis)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
}

// ---- the interpreter ----------------------------------------------------------------------------

namespace {

// One evaluated value: `f` for floating types, `i` for the rest (normalized to the type's width).
struct Value {
  double f = 0;
  int64_t i = 0;
};

class ExprProgram {
 public:
  ExprProgram(const codegen::KernelFunc& kernel, std::vector<const ir::TensorData*> arg_data)
      : k_(kernel), args_(std::move(arg_data)) {}

  // Linearizes `root` (post-order, each shared node once); keeps it alive.
  void Compile(const Expr& root) {
    root_ = root;
    std::unordered_map<const ExprNode*, int> slot;
    std::vector<std::pair<const ExprNode*, size_t>> stack = {{root.get(), 0}};
    while (!stack.empty()) {
      const ExprNode* n = stack.back().first;
      if (slot.count(n)) {
        stack.pop_back();
        continue;
      }
      const size_t next = stack.back().second;
      if (next < n->operands.size()) {
        ++stack.back().second;
        const ExprNode* child = n->operands[next].get();
        if (!slot.count(child)) stack.push_back({child, 0});  // may reallocate: no references held
        continue;
      }
      Step step{n, {}};
      for (const Expr& o : n->operands) step.args.push_back(slot.at(o.get()));
      slot[n] = static_cast<int>(steps_.size());
      steps_.push_back(std::move(step));
      stack.pop_back();
    }
    values_.resize(steps_.size());
  }

  Result<Value> Run(const std::vector<int64_t>& vars) {
    for (size_t s = 0; s < steps_.size(); ++s) {
      KEEL_ASSIGN_OR_RETURN(values_[s], Eval(steps_[s], vars));
    }
    return values_.back();
  }

 private:
  struct Step {
    const ExprNode* node;
    std::vector<int> args;
  };

  const Value& Arg(const Step& s, size_t i) const { return values_[static_cast<size_t>(s.args[i])]; }
  Status Bug(const std::string& m) const { return Internal("reference interpreter (kernel " + k_.name() + "): " + m); }

  Result<Value> Load(const Step& s) {
    const codegen::Buffer& buf = k_.buffer(s.node->buffer);
    int64_t flat = 0;
    for (size_t d = 0; d < buf.shape.size(); ++d) {
      const int64_t x = Arg(s, d).i;
      if (x < 0 || x >= buf.shape[d]) {
        return Bug("load of " + buf.name + " out of bounds: index " + std::to_string(x) + " in dimension " +
                   std::to_string(d) + " of size " + std::to_string(buf.shape[d]));
      }
      flat = flat * buf.shape[d] + x;
    }
    Value v;
    if (buf.scope == codegen::BufferScope::kArg) {
      const ir::TensorData* t = args_.at(static_cast<size_t>(buf.arg_index));
      if (IsFloatType(buf.dtype)) v.f = ElementAsDouble(*t, flat);
      else v.i = ElementAsInt(*t, flat);
      return v;
    }
    if (buf.scope == codegen::BufferScope::kConstant) {
      ir::TensorData t;
      t.type = {buf.dtype, {buf.NumElements()}};
      const size_t es = keel::DataTypeSize(buf.dtype);
      t.bytes.assign(buf.constant_data.begin() + static_cast<int64_t>(flat * static_cast<int64_t>(es)),
                     buf.constant_data.begin() + static_cast<int64_t>((flat + 1) * static_cast<int64_t>(es)));
      if (IsFloatType(buf.dtype)) v.f = ElementAsDouble(t, 0);
      else v.i = ElementAsInt(t, 0);
      return v;
    }
    return Bug("load of a " + std::string(buf.scope == codegen::BufferScope::kLocal ? "local" : "workspace") +
               " buffer in an index function");
  }

  Result<Value> Eval(const Step& s, const std::vector<int64_t>& vars) {
    const ExprNode& n = *s.node;
    Value v;
    switch (n.kind) {
      case ExprKind::kIntConst: v.i = WrapTo(n.type, n.int_value); return v;
      case ExprKind::kFloatConst: v.f = n.float_value; return v;
      case ExprKind::kVar:
        if (n.int_value < 0 || static_cast<size_t>(n.int_value) >= vars.size()) return Bug("unbound variable");
        v.i = vars[static_cast<size_t>(n.int_value)];
        return v;
      case ExprKind::kLoad: return Load(s);
      case ExprKind::kSelect: return Arg(s, 0).i != 0 ? Arg(s, 1) : Arg(s, 2);
      case ExprKind::kCast: return Cast(n.operands[0].type(), n.type, Arg(s, 0));
      case ExprKind::kBitcast: return Bitcast(n.operands[0].type(), n.type, Arg(s, 0));
      case ExprKind::kUnary: return Unary(n, Arg(s, 0));
      case ExprKind::kBinary: return Binary(n, Arg(s, 0), Arg(s, 1));
    }
    return Bug("unknown expression kind");
  }

  static Value Cast(DType from, DType to, const Value& x) {
    Value v;
    const bool ffrom = IsFloatType(from);
    if (IsFloatType(to)) {
      v.f = RoundToFloat(to, ffrom ? x.f : IntToDouble(from, x.i));
    } else if (ffrom) {
      v.i = FloatToInt(to, x.f);
    } else {
      v.i = WrapTo(to, to == DType::kBool ? (x.i != 0) : x.i);
    }
    return v;
  }

  // The bits of x (of type `from`) as type `to` (same size; bf16 is its bits).
  static Value Bitcast(DType from, DType to, const Value& x) {
    uint64_t bits = 0;
    switch (from) {
      case DType::kF64: std::memcpy(&bits, &x.f, 8); break;
      case DType::kF32: {
        const float f = static_cast<float>(x.f);
        uint32_t b32 = 0;
        std::memcpy(&b32, &f, 4);
        bits = b32;
        break;
      }
      case DType::kF16: bits = FloatToHalf(static_cast<float>(x.f)); break;
      case DType::kBF16: bits = FloatToBFloat16(static_cast<float>(x.f)); break;
      default: bits = static_cast<uint64_t>(x.i); break;
    }
    Value v;
    switch (to) {
      case DType::kF64: std::memcpy(&v.f, &bits, 8); break;
      case DType::kF32: {
        const uint32_t b32 = static_cast<uint32_t>(bits);
        float f = 0;
        std::memcpy(&f, &b32, 4);
        v.f = f;
        break;
      }
      case DType::kF16: v.f = HalfToFloat(static_cast<uint16_t>(bits)); break;
      case DType::kBF16: v.f = BFloat16ToFloat(static_cast<uint16_t>(bits)); break;
      default: v.i = WrapTo(to, static_cast<int64_t>(bits)); break;
    }
    return v;
  }

  Result<Value> Unary(const ExprNode& n, const Value& x) {
    using codegen::UnaryOp;
    Value v;
    if (!IsFloatType(n.type)) {
      switch (n.unary) {
        case UnaryOp::kNeg: v.i = WrapTo(n.type, -x.i); return v;
        case UnaryOp::kAbs: v.i = WrapTo(n.type, x.i < 0 && !codegen::IsUnsigned(n.type) ? -x.i : x.i); return v;
        case UnaryOp::kNot: v.i = n.type == DType::kBool ? (x.i == 0) : WrapTo(n.type, ~x.i); return v;
        default: return Bug(std::string("integer ") + codegen::UnaryOpName(n.unary));
      }
    }
    const double a = x.f;
    switch (n.unary) {
      case UnaryOp::kNeg: v.f = -a; break;
      case UnaryOp::kAbs: v.f = std::fabs(a); break;
      case UnaryOp::kExp: v.f = std::exp(a); break;
      case UnaryOp::kLog: v.f = std::log(a); break;
      case UnaryOp::kSqrt: v.f = std::sqrt(a); break;
      case UnaryOp::kRsqrt: v.f = 1.0 / std::sqrt(a); break;
      case UnaryOp::kTanh: v.f = std::tanh(a); break;
      case UnaryOp::kErf: v.f = std::erf(a); break;
      case UnaryOp::kSigmoid: v.f = 1.0 / (1.0 + std::exp(-a)); break;
      case UnaryOp::kFloor: v.f = std::floor(a); break;
      case UnaryOp::kCeil: v.f = std::ceil(a); break;
      case UnaryOp::kNot: return Bug("not on a float");
      case UnaryOp::kSin: v.f = std::sin(a); break;
      case UnaryOp::kCos: v.f = std::cos(a); break;
      case UnaryOp::kTan: v.f = std::tan(a); break;
      case UnaryOp::kAsin: v.f = std::asin(a); break;
      case UnaryOp::kAcos: v.f = std::acos(a); break;
      case UnaryOp::kAtan: v.f = std::atan(a); break;
      case UnaryOp::kSinh: v.f = std::sinh(a); break;
      case UnaryOp::kCosh: v.f = std::cosh(a); break;
      case UnaryOp::kAsinh: v.f = std::asinh(a); break;
      case UnaryOp::kAcosh: v.f = std::acosh(a); break;
      case UnaryOp::kAtanh: v.f = std::atanh(a); break;
      case UnaryOp::kRound: v.f = std::nearbyint(a); break;
    }
    return v;
  }

  Result<Value> Binary(const ExprNode& n, const Value& x, const Value& y) {
    using codegen::BinaryOp;
    const DType t = n.operands[0].type();
    Value v;
    if (IsFloatType(t)) {
      const double a = x.f, b = y.f;
      switch (n.binary) {
        case BinaryOp::kAdd: v.f = a + b; break;
        case BinaryOp::kSub: v.f = a - b; break;
        case BinaryOp::kMul: v.f = a * b; break;
        case BinaryOp::kDiv: v.f = a / b; break;
        case BinaryOp::kMod: v.f = std::fmod(a, b); break;
        case BinaryOp::kMin: v.f = a < b ? a : b; break;  // the back ends' select(a < b, a, b)
        case BinaryOp::kMax: v.f = a > b ? a : b; break;
        case BinaryOp::kPow: v.f = std::pow(a, b); break;
        case BinaryOp::kLt: v.i = a < b; break;
        case BinaryOp::kLe: v.i = a <= b; break;
        case BinaryOp::kGt: v.i = a > b; break;
        case BinaryOp::kGe: v.i = a >= b; break;
        case BinaryOp::kEq: v.i = a == b; break;
        case BinaryOp::kNe: v.i = !(a == b); break;
        default: return Bug(std::string("float operands for ") + codegen::BinaryOpName(n.binary));
      }
      return v;
    }
    const bool uns = codegen::IsUnsigned(t);
    const int64_t a = x.i, b = y.i;
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    const int bits = static_cast<int>(keel::DataTypeSize(t) * 8);
    switch (n.binary) {
      case BinaryOp::kAdd: v.i = static_cast<int64_t>(ua + ub); break;
      case BinaryOp::kSub: v.i = static_cast<int64_t>(ua - ub); break;
      case BinaryOp::kMul: v.i = static_cast<int64_t>(ua * ub); break;
      case BinaryOp::kDiv:
      case BinaryOp::kMod:
        if (b == 0) return Bug("integer division by zero");
        if (uns) v.i = static_cast<int64_t>(n.binary == BinaryOp::kDiv ? ua / ub : ua % ub);
        else if (a == std::numeric_limits<int64_t>::min() && b == -1) v.i = n.binary == BinaryOp::kDiv ? a : 0;
        else v.i = n.binary == BinaryOp::kDiv ? a / b : a % b;
        break;
      case BinaryOp::kMin: v.i = (uns ? ua < ub : a < b) ? a : b; break;
      case BinaryOp::kMax: v.i = (uns ? ua > ub : a > b) ? a : b; break;
      case BinaryOp::kPow: return Bug("integer pow");
      case BinaryOp::kLt: v.i = uns ? ua < ub : a < b; return v;
      case BinaryOp::kLe: v.i = uns ? ua <= ub : a <= b; return v;
      case BinaryOp::kGt: v.i = uns ? ua > ub : a > b; return v;
      case BinaryOp::kGe: v.i = uns ? ua >= ub : a >= b; return v;
      case BinaryOp::kEq: v.i = a == b; return v;
      case BinaryOp::kNe: v.i = a != b; return v;
      case BinaryOp::kAnd: v.i = a & b; break;
      case BinaryOp::kOr: v.i = a | b; break;
      case BinaryOp::kXor: v.i = a ^ b; break;
      case BinaryOp::kShl:
      case BinaryOp::kShr: {
        if (b < 0 || b >= bits) return Bug("shift by " + std::to_string(b) + " of a " + std::to_string(bits) + "-bit value");
        if (n.binary == BinaryOp::kShl) v.i = static_cast<int64_t>(ua << b);
        else if (uns) v.i = static_cast<int64_t>((bits == 64 ? ua : ua & ((uint64_t{1} << bits) - 1)) >> b);
        else v.i = a >> b;
        break;
      }
    }
    v.i = WrapTo(n.type, v.i);
    return v;
  }

  const codegen::KernelFunc& k_;
  std::vector<const ir::TensorData*> args_;
  Expr root_;  // owns the nodes the steps point to
  std::vector<Step> steps_;
  std::vector<Value> values_;
};

}  // namespace

Result<std::vector<ir::TensorDataPtr>> InterpretOutputs(const OpDef& def, const ir::Node& node,
                                                        const std::vector<ir::TensorDataPtr>& inputs,
                                                        const std::vector<ir::TensorType>& out_types) {
  codegen::KernelFunc kernel("reference_" + def.name);
  codegen::LowerOptions options;
  codegen::LowerContext ctx(kernel, options);
  std::vector<const ir::TensorData*> arg_data;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const ir::Value* in = node.input(i);
    if (!in) continue;
    if (i >= inputs.size() || !inputs[i]) return NodeError(node, "no value for input " + std::to_string(i));
    const ir::TensorData& data = *inputs[i];
    if (ctx.Find(in)) continue;  // the same value twice
    const int buf = kernel.AddArg(codegen::IndexedName("in", static_cast<int64_t>(i)), data.type.dtype, data.type.shape,
                                  codegen::ArgAccess::kRead);
    arg_data.push_back(&data);
    codegen::TensorFn fn;
    fn.type = data.type;
    fn.buffer = buf;
    codegen::KernelFunc* k = &kernel;
    fn.at = [k, buf](const std::vector<Expr>& idx) { return k->Load(buf, idx); };
    ctx.Define(in, std::move(fn));
  }
  KEEL_RETURN_IF_ERROR(DefineOutputs(def, ctx, node));
  std::vector<ir::TensorDataPtr> outs;
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    const codegen::TensorFn* fn = ctx.Find(node.output(o));
    if (!fn) return Internal(NodeDescription(node) + ": output " + std::to_string(o) + " was not defined");
    const ir::TensorType& type = out_types.at(o);
    std::vector<Expr> idx;
    std::vector<int64_t> vars;
    for (size_t d = 0; d < type.shape.size(); ++d) {
      idx.push_back(kernel.NewVar("i"));
    }
    ExprProgram program(kernel, arg_data);
    program.Compile(codegen::Cast(fn->at(idx), type.dtype));
    vars.assign(static_cast<size_t>(kernel.num_vars()), 0);
    auto out = NewTensor(type);
    const int64_t count = type.NumElements();
    for (int64_t flat = 0; flat < count; ++flat) {
      int64_t rest = flat;
      for (size_t d = type.shape.size(); d-- > 0;) {
        vars[static_cast<size_t>(idx[d].int_value())] = rest % type.shape[d];
        rest /= type.shape[d];
      }
      KEEL_ASSIGN_OR_RETURN(Value v, program.Run(vars));
      if (IsFloatType(type.dtype)) StoreDouble(*out, flat, v.f);
      else StoreInt(*out, flat, v.i);
    }
    outs.push_back(std::move(out));
  }
  return outs;
}

}  // namespace keel::ops
