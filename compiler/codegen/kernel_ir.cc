// compiler/codegen/kernel_ir.cc — construction, folding, verification and printing
// of the kernel IR (see kernel_ir.h for the semantics).
#include "compiler/codegen/kernel_ir.h"

#include <cmath>
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace keel::codegen {
namespace {

std::shared_ptr<ExprNode> MakeNode(ExprKind kind, DType type) {
  auto n = std::make_shared<ExprNode>();
  n->kind = kind;
  n->type = type;
  return n;
}

bool IsConst(const Expr& e) {
  return !e.is_null() && (e->kind == ExprKind::kIntConst || e->kind == ExprKind::kFloatConst);
}

// A literal operand adopts the type of the other operand, so `x + 1` works for
// any dtype of x.
Expr Retype(const Expr& literal, DType to) {
  if (literal.type() == to) return literal;
  double v = literal->kind == ExprKind::kIntConst ? static_cast<double>(literal->int_value) : literal->float_value;
  if (IsFloat(to)) return FloatConst(v, to);
  return IntConst(static_cast<int64_t>(v), to);
}

bool IsCompare(BinaryOp op) {
  return op == BinaryOp::kLt || op == BinaryOp::kLe || op == BinaryOp::kGt || op == BinaryOp::kGe ||
         op == BinaryOp::kEq || op == BinaryOp::kNe;
}

std::string Join(const std::vector<int64_t>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os.str();
}

}  // namespace

std::string IndexedName(const char* prefix, int64_t index) {
  std::string s(prefix);
  s.append(std::to_string(index));
  return s;
}

bool IsFloat(DType dtype) { return keel::IsFloatType(dtype); }

bool IsUnsigned(DType dtype) { return keel::IsUnsignedIntType(dtype) || keel::IsBoolType(dtype); }

bool IsSupportedKernelDType(DType dtype) { return keel::DataTypeSize(dtype) != 0; }

const char* UnaryOpName(UnaryOp op) {
  static const char* kNames[] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "erf",
                                 "sigmoid", "floor", "ceil", "not", "sin", "cos", "tan", "asin",
                                 "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "round"};
  return kNames[static_cast<int>(op)];
}

const char* LibmName(UnaryOp op) {
  switch (op) {
    case UnaryOp::kSin: return "sin";
    case UnaryOp::kCos: return "cos";
    case UnaryOp::kTan: return "tan";
    case UnaryOp::kAsin: return "asin";
    case UnaryOp::kAcos: return "acos";
    case UnaryOp::kAtan: return "atan";
    case UnaryOp::kSinh: return "sinh";
    case UnaryOp::kCosh: return "cosh";
    case UnaryOp::kAsinh: return "asinh";
    case UnaryOp::kAcosh: return "acosh";
    case UnaryOp::kAtanh: return "atanh";
    case UnaryOp::kTanh: return "tanh";
    default: return nullptr;
  }
}

const char* BinaryOpName(BinaryOp op) {
  static const char* kNames[] = {"+", "-", "*", "/", "%", "min", "max", "pow",
                                 "<", "<=", ">", ">=", "==", "!=", "&&", "||", "^", "<<", ">>"};
  return kNames[static_cast<int>(op)];
}

const char* LoopKindName(LoopKind kind) {
  static const char* kNames[] = {"for", "parallel for", "vectorize for", "unroll for", "novectorize for", "lanes for"};
  return kNames[static_cast<int>(kind)];
}

const char* ArgAccessName(ArgAccess access) {
  static const char* kNames[] = {"read", "write", "read_write"};
  return kNames[static_cast<int>(access)];
}

// ---- Expr ------------------------------------------------------------------------------

Expr::Expr(int64_t value) : node_(IntConst(value).node_) {}

DType Expr::type() const { return node_ ? node_->type : DType::kI64; }
bool Expr::IsIntConst() const { return node_ && node_->kind == ExprKind::kIntConst; }
bool Expr::IsIntConst(int64_t value) const { return IsIntConst() && node_->int_value == value; }
int64_t Expr::int_value() const { return node_ ? node_->int_value : 0; }

Expr IntConst(int64_t value, DType type) {
  auto n = MakeNode(ExprKind::kIntConst, type);
  n->int_value = value;
  return Expr(std::move(n));
}

Expr FloatConst(double value, DType type) {
  auto n = MakeNode(ExprKind::kFloatConst, type);
  n->float_value = value;
  return Expr(std::move(n));
}

Expr Unary(UnaryOp op, Expr a) {
  auto n = MakeNode(ExprKind::kUnary, a.type());
  n->unary = op;
  n->operands = {std::move(a)};
  return Expr(std::move(n));
}

Expr Binary(BinaryOp op, Expr a, Expr b) {
  if (IsConst(a) && !IsConst(b)) a = Retype(a, b.type());
  if (IsConst(b) && !IsConst(a)) b = Retype(b, a.type());
  // Integer folding keeps index expressions readable; the back end folds the rest.
  if (a.IsIntConst() && b.IsIntConst() && a.type() == b.type() && !IsCompare(op)) {
    int64_t x = a.int_value(), y = b.int_value();
    switch (op) {
      case BinaryOp::kAdd: return IntConst(x + y, a.type());
      case BinaryOp::kSub: return IntConst(x - y, a.type());
      case BinaryOp::kMul: return IntConst(x * y, a.type());
      case BinaryOp::kDiv: if (y != 0) return IntConst(x / y, a.type()); break;
      case BinaryOp::kMod: if (y != 0) return IntConst(x % y, a.type()); break;
      case BinaryOp::kMin: return IntConst(std::min(x, y), a.type());
      case BinaryOp::kMax: return IntConst(std::max(x, y), a.type());
      default: break;
    }
  }
  if (!IsFloat(a.type())) {
    if (op == BinaryOp::kAdd && a.IsIntConst(0)) return b;
    if ((op == BinaryOp::kAdd || op == BinaryOp::kSub) && b.IsIntConst(0)) return a;
    if (op == BinaryOp::kMul && (a.IsIntConst(1))) return b;
    if ((op == BinaryOp::kMul || op == BinaryOp::kDiv) && b.IsIntConst(1)) return a;
    if (op == BinaryOp::kMul && (a.IsIntConst(0) || b.IsIntConst(0))) return IntConst(0, a.type());
    if (op == BinaryOp::kMod && b.IsIntConst(1)) return IntConst(0, a.type());
  }
  auto n = MakeNode(ExprKind::kBinary, IsCompare(op) ? DType::kBool : a.type());
  n->binary = op;
  n->operands = {std::move(a), std::move(b)};
  return Expr(std::move(n));
}

Expr Select(Expr cond, Expr a, Expr b) {
  if (IsConst(a) && !IsConst(b)) a = Retype(a, b.type());
  if (IsConst(b) && !IsConst(a)) b = Retype(b, a.type());
  if (cond->kind == ExprKind::kIntConst) return cond->int_value ? a : b;
  auto n = MakeNode(ExprKind::kSelect, a.type());
  n->operands = {std::move(cond), std::move(a), std::move(b)};
  return Expr(std::move(n));
}

Expr Cast(Expr a, DType to) {
  if (a.type() == to) return a;
  if (IsConst(a)) return Retype(a, to);
  auto n = MakeNode(ExprKind::kCast, to);
  n->operands = {std::move(a)};
  return Expr(std::move(n));
}

Expr Bitcast(Expr a, DType to) {
  if (a.type() == to) return a;
  auto n = MakeNode(ExprKind::kBitcast, to);
  n->operands = {std::move(a)};
  return Expr(std::move(n));
}

Expr Placeholder(int64_t id, DType type) {
  auto n = MakeNode(ExprKind::kVar, type);
  n->int_value = id;
  return Expr(std::move(n));
}

Expr SubstituteVars(const Expr& e, const std::function<Expr(int64_t id)>& replace) {
  // Memoized by node so that shared subexpressions stay shared (the result is a DAG of the same size).
  std::map<const ExprNode*, Expr> done;
  std::function<Expr(const Expr&)> visit = [&](const Expr& x) -> Expr {
    if (x.is_null()) return x;
    auto it = done.find(x.get());
    if (it != done.end()) return it->second;
    Expr out = x;
    if (x->kind == ExprKind::kVar) {
      Expr r = replace(x->int_value);
      if (!r.is_null()) out = r;
    } else if (!x->operands.empty()) {
      std::vector<Expr> ops;
      bool changed = false;
      for (const Expr& o : x->operands) {
        ops.push_back(visit(o));
        changed = changed || ops.back().get() != o.get();
      }
      if (changed) {
        auto n = std::make_shared<ExprNode>(*x.get());
        n->operands = std::move(ops);
        out = Expr(std::move(n));
      }
    }
    done.emplace(x.get(), out);
    return out;
  };
  return visit(e);
}

Expr Min(Expr a, Expr b) { return Binary(BinaryOp::kMin, std::move(a), std::move(b)); }
Expr Max(Expr a, Expr b) { return Binary(BinaryOp::kMax, std::move(a), std::move(b)); }
Expr Clamp(Expr a, int64_t lo, int64_t hi) { return Min(Max(std::move(a), lo), hi); }

Expr operator+(Expr a, Expr b) { return Binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Binary(BinaryOp::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Binary(BinaryOp::kMul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr operator%(Expr a, Expr b) { return Binary(BinaryOp::kMod, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return Binary(BinaryOp::kLt, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return Binary(BinaryOp::kLe, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return Binary(BinaryOp::kGt, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return Binary(BinaryOp::kGe, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) {
  if (a.IsIntConst()) return a.int_value() ? b : a;
  if (b.IsIntConst()) return b.int_value() ? a : b;
  return Binary(BinaryOp::kAnd, std::move(a), std::move(b));
}
Expr operator||(Expr a, Expr b) { return Binary(BinaryOp::kOr, std::move(a), std::move(b)); }
Expr operator-(Expr a) { return Unary(UnaryOp::kNeg, std::move(a)); }

// ---- statements -------------------------------------------------------------------------

Stmt Block(std::vector<Stmt> stmts) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::kBlock;
  for (auto& st : stmts) if (st) s->body.push_back(std::move(st));
  return s;
}

Stmt For(Expr var, Expr begin, Expr end, LoopKind kind, Stmt body) {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::kFor;
  s->var = std::move(var);
  s->begin = std::move(begin);
  s->end = std::move(end);
  s->loop = kind;
  if (body) s->body.push_back(std::move(body));
  return s;
}

Stmt If(Expr cond, Stmt then_body, Stmt else_body) {
  if (cond.IsIntConst()) return cond.int_value() ? then_body : else_body;
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::kIf;
  s->cond = std::move(cond);
  if (then_body) s->body.push_back(std::move(then_body));
  if (else_body) s->else_body.push_back(std::move(else_body));
  return s;
}

// ---- KernelFunc ---------------------------------------------------------------------------

int64_t Buffer::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int KernelFunc::AddArg(std::string name, DType dtype, std::vector<int64_t> shape, ArgAccess access) {
  args_.push_back({name, dtype, shape, access});
  Buffer b;
  b.id = static_cast<int>(buffers_.size());
  b.name = std::move(name);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.scope = BufferScope::kArg;
  b.arg_index = static_cast<int>(args_.size()) - 1;
  buffers_.push_back(std::move(b));
  arg_buffer_.push_back(buffers_.back().id);
  return buffers_.back().id;
}

int KernelFunc::AddArgView(int arg_index, std::string name, std::vector<int64_t> shape) {
  Buffer b = buffers_.at(static_cast<size_t>(ArgBuffer(arg_index)));
  b.id = static_cast<int>(buffers_.size());
  b.name = std::move(name);
  b.shape = std::move(shape);
  buffers_.push_back(std::move(b));
  return buffers_.back().id;
}

int KernelFunc::AddWorkspace(std::string name, DType dtype, std::vector<int64_t> shape) {
  Buffer b;
  b.id = static_cast<int>(buffers_.size());
  b.name = std::move(name);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.scope = BufferScope::kWorkspace;
  b.byte_offset = workspace_bytes_;
  int64_t bytes = b.NumElements() * static_cast<int64_t>(ir::DTypeSize(dtype));
  workspace_bytes_ += (bytes + 63) / 64 * 64;
  buffers_.push_back(std::move(b));
  return buffers_.back().id;
}

int KernelFunc::AddLocal(std::string name, DType dtype, std::vector<int64_t> shape) {
  Buffer b;
  b.id = static_cast<int>(buffers_.size());
  b.name = std::move(name);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.scope = BufferScope::kLocal;
  buffers_.push_back(std::move(b));
  return buffers_.back().id;
}

int KernelFunc::AddConstant(std::string name, DType dtype, std::vector<int64_t> shape,
                            std::vector<uint8_t> data) {
  Buffer b;
  b.id = static_cast<int>(buffers_.size());
  b.name = std::move(name);
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.scope = BufferScope::kConstant;
  b.constant_data = std::move(data);
  buffers_.push_back(std::move(b));
  return buffers_.back().id;
}

Expr KernelFunc::NewVar(const std::string& name) {
  auto n = MakeNode(ExprKind::kVar, DType::kI64);
  n->int_value = next_var_++;
  var_names_.push_back(name);
  return Expr(std::move(n));
}

Expr KernelFunc::Load(int buffer, std::vector<Expr> indices) const {
  auto n = MakeNode(ExprKind::kLoad, buffers_.at(static_cast<size_t>(buffer)).dtype);
  n->buffer = buffer;
  n->operands = std::move(indices);
  return Expr(std::move(n));
}

Stmt KernelFunc::Store(int buffer, std::vector<Expr> indices, Expr value) const {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::kStore;
  s->buffer = buffer;
  s->indices = std::move(indices);
  s->value = std::move(value);
  return s;
}

Stmt KernelFunc::Prefetch(int buffer, std::vector<Expr> indices) const {
  auto s = std::make_shared<StmtNode>();
  s->kind = StmtKind::kPrefetch;
  s->buffer = buffer;
  s->indices = std::move(indices);
  return s;
}

// ---- verification -------------------------------------------------------------------------

namespace {

// True when `s` is a store or a block of stores (what a kLanes body may hold).
bool OnlyStores(const StmtNode& s) {
  if (s.kind == StmtKind::kStore) return true;
  if (s.kind != StmtKind::kBlock) return false;
  for (const Stmt& c : s.body)
    if (!OnlyStores(*c)) return false;
  return true;
}

class Verifier {
 public:
  explicit Verifier(const KernelFunc& k) : k_(k) {}

  Status Run() {
    if (!k_.body()) return Err("has no body");
    for (const KernelArg& a : k_.args())
      if (!IsSupportedKernelDType(a.dtype)) return Err("argument " + a.name + " has unsupported dtype " + ir::DTypeName(a.dtype));
    return VisitStmt(*k_.body(), -1);
  }

 private:
  Status Err(const std::string& m) const { return Internal("kernel " + k_.name() + ": " + m); }

  Status VisitExpr(const Expr& e, int region) {
    if (e.is_null()) return Err("null expression");
    switch (e->kind) {
      case ExprKind::kIntConst:
      case ExprKind::kFloatConst:
        return Status::Ok();
      case ExprKind::kVar:
        if (!bound_.count(e->int_value)) return Err("unbound loop variable " + k_.var_names().at(static_cast<size_t>(e->int_value)));
        return Status::Ok();
      case ExprKind::kLoad: {
        KEEL_RETURN_IF_ERROR(CheckAccess(e->buffer, e->operands, region));
        for (const Expr& i : e->operands) KEEL_RETURN_IF_ERROR(VisitExpr(i, region));
        return Status::Ok();
      }
      case ExprKind::kUnary:
        if (e->unary != UnaryOp::kNot && e->unary != UnaryOp::kNeg && e->unary != UnaryOp::kAbs && !IsFloat(e->type))
          return Err(std::string("math op ") + UnaryOpName(e->unary) + " on a non-float value");
        return VisitExpr(e->operands[0], region);
      case ExprKind::kBinary:
        if (e->operands[0].type() != e->operands[1].type())
          return Err(std::string("operand types differ for ") + BinaryOpName(e->binary) + ": " +
                     ExprToString(k_, e));
        KEEL_RETURN_IF_ERROR(VisitExpr(e->operands[0], region));
        return VisitExpr(e->operands[1], region);
      case ExprKind::kSelect:
        if (e->operands[0].type() != DType::kBool) return Err("select condition is not bool");
        if (e->operands[1].type() != e->operands[2].type()) return Err("select operand types differ: " + ExprToString(k_, e));
        for (const Expr& o : e->operands) KEEL_RETURN_IF_ERROR(VisitExpr(o, region));
        return Status::Ok();
      case ExprKind::kCast:
        return VisitExpr(e->operands[0], region);
      case ExprKind::kBitcast: {
        const DType from = e->operands[0].type();
        if (from == DType::kBool || e->type == DType::kBool || ir::DTypeSize(from) != ir::DTypeSize(e->type))
          return Err("bitcast between types of different sizes: " + ExprToString(k_, e));
        return VisitExpr(e->operands[0], region);
      }
    }
    return Err("unknown expression kind");
  }

  Status CheckAccess(int buffer, const std::vector<Expr>& indices, int region) {
    if (buffer < 0 || buffer >= static_cast<int>(k_.buffers().size())) return Err("buffer id out of range");
    const Buffer& b = k_.buffer(buffer);
    if (indices.size() != b.shape.size())
      return Err("buffer " + b.name + " of rank " + std::to_string(b.shape.size()) + " indexed with " +
                 std::to_string(indices.size()) + " indices");
    for (const Expr& i : indices)
      if (i.type() != DType::kI64) return Err("index into " + b.name + " is not i64");
    if (b.scope == BufferScope::kLocal) {
      auto [it, inserted] = local_region_.emplace(buffer, region);
      if (!inserted && it->second != region)
        return Err("local buffer " + b.name + " is used both inside and outside a parallel loop");
    }
    return Status::Ok();
  }

  Status VisitStmt(const StmtNode& s, int region) {
    switch (s.kind) {
      case StmtKind::kBlock:
        for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(VisitStmt(*c, region));
        return Status::Ok();
      case StmtKind::kFor: {
        if (s.var.is_null() || s.var->kind != ExprKind::kVar) return Err("loop without a variable");
        KEEL_RETURN_IF_ERROR(VisitExpr(s.begin, region));
        KEEL_RETURN_IF_ERROR(VisitExpr(s.end, region));
        if (s.begin.type() != DType::kI64 || s.end.type() != DType::kI64) return Err("loop bounds are not i64");
        int inner = region;
        if (s.loop == LoopKind::kParallel) {
          if (region >= 0) return Err("nested parallel loop");
          inner = next_region_++;
        }
        if (s.loop == LoopKind::kUnroll && (!s.begin.IsIntConst() || !s.end.IsIntConst()))
          return Err("unrolled loop with non-constant bounds");
        if (s.loop == LoopKind::kLanes) {
          if (!s.begin.IsIntConst() || !s.end.IsIntConst()) return Err("lanes loop with non-constant bounds");
          const int64_t n = s.end.int_value() - s.begin.int_value();
          if (n < 1 || n > kMaxLanes) return Err("lanes loop with " + std::to_string(n) + " lanes");
          for (const Stmt& c : s.body)
            if (!OnlyStores(*c)) return Err("lanes loop body holds a statement other than a store");
        }
        if (!bound_.insert(s.var->int_value).second) return Err("loop variable rebound");
        for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(VisitStmt(*c, inner));
        bound_.erase(s.var->int_value);
        return Status::Ok();
      }
      case StmtKind::kStore: {
        KEEL_RETURN_IF_ERROR(CheckAccess(s.buffer, s.indices, region));
        const Buffer& b = k_.buffer(s.buffer);
        if (b.scope == BufferScope::kConstant) return Err("store into constant buffer " + b.name);
        if (b.scope == BufferScope::kArg && k_.args().at(static_cast<size_t>(b.arg_index)).access == ArgAccess::kRead)
          return Err("store into read-only argument " + b.name);
        for (const Expr& i : s.indices) KEEL_RETURN_IF_ERROR(VisitExpr(i, region));
        KEEL_RETURN_IF_ERROR(VisitExpr(s.value, region));
        if (s.value.type() != b.dtype)
          return Err("store of " + std::string(ir::DTypeName(s.value.type())) + " into " + b.name + " of " +
                     ir::DTypeName(b.dtype));
        return Status::Ok();
      }
      case StmtKind::kPrefetch:
        KEEL_RETURN_IF_ERROR(CheckAccess(s.buffer, s.indices, region));
        for (const Expr& i : s.indices) KEEL_RETURN_IF_ERROR(VisitExpr(i, region));
        return Status::Ok();
      case StmtKind::kIf:
        KEEL_RETURN_IF_ERROR(VisitExpr(s.cond, region));
        if (s.cond.type() != DType::kBool) return Err("if condition is not bool");
        for (const Stmt& c : s.body) KEEL_RETURN_IF_ERROR(VisitStmt(*c, region));
        for (const Stmt& c : s.else_body) KEEL_RETURN_IF_ERROR(VisitStmt(*c, region));
        return Status::Ok();
    }
    return Err("unknown statement kind");
  }

  const KernelFunc& k_;
  std::set<int64_t> bound_;
  std::map<int, int> local_region_;
  int next_region_ = 0;
};

// Streams an expression without building intermediate strings.
void PrintExpr(const KernelFunc& k, const Expr& e, std::ostream& os);
struct Ex {
  const KernelFunc& k;
  const Expr& e;
};
std::ostream& operator<<(std::ostream& os, const Ex& x) {
  PrintExpr(x.k, x.e, os);
  return os;
}

void PrintStmt(const KernelFunc& k, const StmtNode& s, int indent, std::ostringstream& os) {
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  switch (s.kind) {
    case StmtKind::kBlock:
      for (const Stmt& c : s.body) PrintStmt(k, *c, indent, os);
      return;
    case StmtKind::kFor:
      os << pad << LoopKindName(s.loop) << " " << Ex{k, s.var} << " in [" << Ex{k, s.begin}
         << ", " << Ex{k, s.end} << ") {\n";
      for (const Stmt& c : s.body) PrintStmt(k, *c, indent + 1, os);
      os << pad << "}\n";
      return;
    case StmtKind::kStore: {
      os << pad << k.buffer(s.buffer).name << "[";
      for (size_t i = 0; i < s.indices.size(); ++i) os << (i ? ", " : "") << Ex{k, s.indices[i]};
      os << "] = " << Ex{k, s.value} << "\n";
      return;
    }
    case StmtKind::kPrefetch: {
      os << pad << "prefetch " << k.buffer(s.buffer).name << "[";
      for (size_t i = 0; i < s.indices.size(); ++i) os << (i ? ", " : "") << Ex{k, s.indices[i]};
      os << "]\n";
      return;
    }
    case StmtKind::kIf:
      os << pad << "if (" << Ex{k, s.cond} << ") {\n";
      for (const Stmt& c : s.body) PrintStmt(k, *c, indent + 1, os);
      if (!s.else_body.empty()) {
        os << pad << "} else {\n";
        for (const Stmt& c : s.else_body) PrintStmt(k, *c, indent + 1, os);
      }
      os << pad << "}\n";
      return;
  }
}

}  // namespace

Status KernelFunc::Verify() const { return Verifier(*this).Run(); }

namespace {

// One stream for the whole tree (a stream per node made printing large kernels
// slow, and kernel deduplication prints every kernel).
void PrintExpr(const KernelFunc& k, const Expr& e, std::ostream& os) {
  if (e.is_null()) {
    os << "<null>";
    return;
  }
  switch (e->kind) {
    case ExprKind::kIntConst:
      os << e->int_value;
      if (e->type != DType::kI64) os << ":" << ir::DTypeName(e->type);
      break;
    case ExprKind::kFloatConst:
      os << e->float_value << "f";
      break;
    case ExprKind::kVar:
      os << k.var_names().at(static_cast<size_t>(e->int_value));
      break;
    case ExprKind::kLoad:
      os << k.buffer(e->buffer).name << "[";
      for (size_t i = 0; i < e->operands.size(); ++i) os << (i ? ", " : "") << Ex{k, e->operands[i]};
      os << "]";
      break;
    case ExprKind::kUnary:
      os << UnaryOpName(e->unary) << "(" << Ex{k, e->operands[0]} << ")";
      break;
    case ExprKind::kBinary:
      if (e->binary == BinaryOp::kMin || e->binary == BinaryOp::kMax || e->binary == BinaryOp::kPow)
        os << BinaryOpName(e->binary) << "(" << Ex{k, e->operands[0]} << ", "
           << Ex{k, e->operands[1]} << ")";
      else
        os << "(" << Ex{k, e->operands[0]} << " " << BinaryOpName(e->binary) << " "
           << Ex{k, e->operands[1]} << ")";
      break;
    case ExprKind::kSelect:
      os << "select(" << Ex{k, e->operands[0]} << ", " << Ex{k, e->operands[1]} << ", "
         << Ex{k, e->operands[2]} << ")";
      break;
    case ExprKind::kCast:
      os << ir::DTypeName(e->type) << "(" << Ex{k, e->operands[0]} << ")";
      break;
    case ExprKind::kBitcast:
      os << "bitcast_" << ir::DTypeName(e->type) << "(" << Ex{k, e->operands[0]} << ")";
      break;
  }
}

}  // namespace

bool UsesVar(const Expr& e, int64_t var) {
  if (e.is_null()) return false;
  if (e->kind == ExprKind::kVar && e->int_value == var) return true;
  for (const Expr& o : e->operands)
    if (UsesVar(o, var)) return true;
  return false;
}

std::optional<int64_t> VarCoefficient(const Expr& e, int64_t var) {
  if (!UsesVar(e, var)) return 0;
  if (e->kind == ExprKind::kVar) return 1;
  if (e->kind != ExprKind::kBinary) return std::nullopt;
  if (e->binary != BinaryOp::kAdd && e->binary != BinaryOp::kSub && e->binary != BinaryOp::kMul) return std::nullopt;
  const std::optional<int64_t> a = VarCoefficient(e->operands[0], var), b = VarCoefficient(e->operands[1], var);
  if (!a || !b) return std::nullopt;
  if (e->binary == BinaryOp::kAdd) return *a + *b;
  if (e->binary == BinaryOp::kSub) return *a - *b;
  if (*b == 0 && e->operands[1].IsIntConst()) return *a * e->operands[1].int_value();
  if (*a == 0 && e->operands[0].IsIntConst()) return *b * e->operands[0].int_value();
  return std::nullopt;
}

std::string ExprToString(const KernelFunc& k, const Expr& e) {
  std::ostringstream os;
  PrintExpr(k, e, os);
  return os.str();
}

std::string KernelFunc::ToString() const {
  std::ostringstream os;
  os << "kernel " << name_ << "(";
  for (size_t i = 0; i < args_.size(); ++i)
    os << (i ? ", " : "") << args_[i].name << ": " << ir::DTypeName(args_[i].dtype) << "[" << Join(args_[i].shape)
       << "] " << ArgAccessName(args_[i].access);
  os << ")";
  if (workspace_bytes_ > 0) os << " workspace " << workspace_bytes_;
  os << " {\n";
  for (const Buffer& b : buffers_) {
    if (b.scope == BufferScope::kArg && ArgBuffer(b.arg_index) == b.id) continue;
    static const char* kScopes[] = {"view", "workspace", "local", "constant"};
    os << "  " << kScopes[static_cast<int>(b.scope)] << " " << b.name << ": " << ir::DTypeName(b.dtype) << "["
       << Join(b.shape) << "]";
    if (b.scope == BufferScope::kArg) os << " of " << args_[static_cast<size_t>(b.arg_index)].name;
    if (b.scope == BufferScope::kWorkspace) os << " at " << b.byte_offset;
    os << "\n";
  }
  if (body_) PrintStmt(*this, *body_, 1, os);
  os << "}\n";
  return os.str();
}

}  // namespace keel::codegen
