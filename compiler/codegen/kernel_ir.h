// compiler/codegen/kernel_ir.h — Keel's kernel IR: loop nests over static shapes.
//
// The kernel IR sits between the graph IR (one Node, maybe a fused group) and a
// device back end (LLVM x86-64 today, LLVM NVPTX later). It is deliberately
// small and device-neutral:
//   * Buffers: kernel arguments (dtype + static shape, row-major), reshaped views
//     of arguments, slices of the kernel's workspace argument, kernel-local
//     scratch arrays (registers / stack) and baked constant arrays.
//   * Statements: blocks, `for` loops (serial, parallel, vectorize, unroll
//     annotations), stores, and `if`.
//   * Expressions: constants, loop variables, loads (multi-dimensional index,
//     linearized row-major by the back end), unary/binary arithmetic and math,
//     select and casts.
// There are no pointers, no aliasing views other than reshapes, and no dynamic
// shapes: everything a back end needs to know is explicit here.
//
// Semantics the back ends implement:
//   * Index expressions are i64; integer Div/Mod are C-style (truncating).
//   * Loads must be in bounds for every evaluation: both operands of a Select
//     are evaluated, so lowerings clamp indices before guarding with Select.
//   * A parallel loop's iterations are independent; it may not be nested in
//     another parallel loop, and local buffers it uses must not be used outside it.
//   * Float arithmetic may be reassociated and contracted (FMA).
//
// Ownership: Expr and Stmt are immutable trees shared through shared_ptr; a
// KernelFunc owns its buffer table. Thread-safety: values are immutable once
// built; distinct KernelFuncs may be built on distinct threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::codegen {

using ir::DType;

// ---- expressions -------------------------------------------------------------

// kBitcast (appended): the operand's bits reinterpreted as another type of the
// same size (never bool); bf16 values are their 16 bits.
enum class ExprKind : uint8_t { kIntConst, kFloatConst, kVar, kLoad, kUnary, kBinary, kSelect, kCast, kBitcast };

// kNot: logical on bool, bitwise on integers. kRound: to nearest, ties to even.
// The trigonometric/hyperbolic ops are libm's (see LibmName).
enum class UnaryOp : uint8_t {
  kNeg, kAbs, kExp, kLog, kSqrt, kRsqrt, kTanh, kErf, kSigmoid, kFloor, kCeil, kNot,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kAsinh, kAcosh, kAtanh, kRound,
};
// kAnd/kOr/kXor: logical on bool, bitwise on integers. kShl/kShr: shifts by
// the second operand, which must be in [0, bit width) (kShr is logical on
// unsigned types, arithmetic on signed ones). kMod on floats is fmod.
enum class BinaryOp : uint8_t {
  kAdd, kSub, kMul, kDiv, kMod, kMin, kMax, kPow,
  kLt, kLe, kGt, kGe, kEq, kNe, kAnd, kOr, kXor, kShl, kShr,
};

const char* UnaryOpName(UnaryOp op);
const char* BinaryOpName(BinaryOp op);
// The C math library's name of a unary op that both back ends implement with
// it ("sin": sinf/sin on the CPU, __nv_sinf/__nv_sin on NVPTX); nullptr for
// the others.
const char* LibmName(UnaryOp op);

struct ExprNode;

// A handle to an immutable expression tree. A default-constructed Expr is null.
class Expr {
 public:
  Expr() = default;
  Expr(int64_t value);  // NOLINT: implicit i64 constants keep index math readable
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool is_null() const { return node_ == nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  DType type() const;
  bool IsIntConst() const;
  bool IsIntConst(int64_t value) const;
  int64_t int_value() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind = ExprKind::kIntConst;
  DType type = DType::kI64;
  int64_t int_value = 0;   // kIntConst; kVar: variable id
  double float_value = 0;  // kFloatConst
  int buffer = -1;         // kLoad: buffer id in the KernelFunc
  UnaryOp unary = UnaryOp::kNeg;
  BinaryOp binary = BinaryOp::kAdd;
  std::vector<Expr> operands;  // kLoad: indices; others: operands
};

// Constructors. Binary operations fold constant integer operands and identities
// (x+0, x*1, x*0) so that index math stays small and printable.
Expr IntConst(int64_t value, DType type = DType::kI64);
Expr FloatConst(double value, DType type = DType::kF32);
Expr Unary(UnaryOp op, Expr a);
Expr Binary(BinaryOp op, Expr a, Expr b);
Expr Select(Expr cond, Expr a, Expr b);
Expr Cast(Expr a, DType to);
// The bits of `a` as type `to` (same byte size, neither bool); `a` itself when
// the types are equal.
Expr Bitcast(Expr a, DType to);
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);
// Clamp an index into [lo, hi].
Expr Clamp(Expr a, int64_t lo, int64_t hi);
// A typed variable standing for a value to be substituted later (e.g. an
// elementwise op's operand). Never appears in a finished kernel.
Expr Placeholder(int64_t id, DType type);
// `e` with every variable for which `replace(id)` is non-null replaced by it;
// shared subexpressions stay shared.
Expr SubstituteVars(const Expr& e, const std::function<Expr(int64_t id)>& replace);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator-(Expr a);

// ---- buffers ------------------------------------------------------------------

enum class BufferScope : uint8_t {
  kArg,        // a kernel argument (or a reshaped view of one): arg_index
  kWorkspace,  // a slice of the workspace argument at byte_offset
  kLocal,      // kernel-local scratch (registers/stack), private to each parallel iteration chunk
  kConstant,   // baked constant data (constant_data)
};
enum class ArgAccess : uint8_t { kRead, kWrite, kReadWrite };

const char* ArgAccessName(ArgAccess access);

struct Buffer {
  int id = -1;
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major; rank 0 = scalar
  BufferScope scope = BufferScope::kArg;
  int arg_index = -1;          // kArg
  int64_t byte_offset = 0;     // kWorkspace
  std::vector<uint8_t> constant_data;  // kConstant, little-endian

  int64_t NumElements() const;
};

// ---- statements ------------------------------------------------------------------

// kPrefetch: a hint that `buffer` at `indices` is read soon (no effect on any
// value; the CPU back end asks the cache for the line, the GPU's ignore it).
// (Appended last: the numbering of the older kinds is unchanged.)
enum class StmtKind : uint8_t { kBlock, kFor, kStore, kIf, kPrefetch };
// kSerial: a plain loop (back ends may vectorize it); kParallel: iterations
// spread over threads; kVectorize: vectorize across iterations; kUnroll: fully
// unrolled (constant bounds); kNoVectorize: a serial loop whose body is already
// register-blocked (e.g. the GEMM micro-kernel's k loop), never vectorized across.
// kLanes: constant bounds; the iterations run in lockstep as the lanes of one
// SIMD vector (end - begin lanes, at most kMaxLanes): each statement of the
// body is executed for every lane before the next one. The body holds only
// stores (and blocks of stores); iterations must be independent (no lane reads
// what another lane writes). A back end without SIMD emission may run it as a
// serial loop: the result is the same. The CPU back end emits it directly as
// vector code (unit-stride accesses become vector loads/stores, lane-invariant
// ones scalars, others gathers/scatters) instead of relying on auto-vectorizers.
// (Appended last: the numbering of the older kinds is unchanged.)
enum class LoopKind : uint8_t { kSerial, kParallel, kVectorize, kUnroll, kNoVectorize, kLanes };
inline constexpr int64_t kMaxLanes = 64;

const char* LoopKindName(LoopKind kind);

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  StmtKind kind = StmtKind::kBlock;
  std::vector<Stmt> body;       // kBlock: statements; kFor: body; kIf: then
  std::vector<Stmt> else_body;  // kIf
  Expr var;                     // kFor: a kVar expression
  Expr begin, end;              // kFor: [begin, end), i64
  LoopKind loop = LoopKind::kSerial;
  int buffer = -1;              // kStore, kPrefetch
  std::vector<Expr> indices;    // kStore, kPrefetch
  Expr value;                   // kStore
  Expr cond;                    // kIf
};

Stmt Block(std::vector<Stmt> stmts);
Stmt For(Expr var, Expr begin, Expr end, LoopKind kind, Stmt body);
Stmt If(Expr cond, Stmt then_body, Stmt else_body = nullptr);

// ---- kernels -------------------------------------------------------------------------

struct KernelArg {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  ArgAccess access = ArgAccess::kRead;
};

// One kernel: arguments in signature order (the workspace, when workspace_bytes
// > 0, is one extra trailing u8 argument that is not listed in `args`), the
// buffer table and the body.
class KernelFunc {
 public:
  explicit KernelFunc(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  const std::vector<KernelArg>& args() const { return args_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  const Buffer& buffer(int id) const { return buffers_.at(static_cast<size_t>(id)); }
  int64_t workspace_bytes() const { return workspace_bytes_; }
  int64_t num_vars() const { return next_var_; }
  const std::vector<std::string>& var_names() const { return var_names_; }
  const Stmt& body() const { return body_; }

  // Building. Each returns the new buffer's id.
  int AddArg(std::string name, DType dtype, std::vector<int64_t> shape, ArgAccess access);
  // A reshaped view (same element count) of argument `arg_index`.
  int AddArgView(int arg_index, std::string name, std::vector<int64_t> shape);
  // A slice of the workspace; grows workspace_bytes (64-byte aligned slices).
  int AddWorkspace(std::string name, DType dtype, std::vector<int64_t> shape);
  int AddLocal(std::string name, DType dtype, std::vector<int64_t> shape);
  int AddConstant(std::string name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> data);
  // The buffer id that reads argument `arg_index` with its declared shape.
  int ArgBuffer(int arg_index) const { return arg_buffer_.at(static_cast<size_t>(arg_index)); }
  Expr NewVar(const std::string& name);
  void set_body(Stmt body) { body_ = std::move(body); }

  // Expression/statement helpers bound to this kernel's buffer table.
  Expr Load(int buffer, std::vector<Expr> indices) const;
  Stmt Store(int buffer, std::vector<Expr> indices, Expr value) const;
  Stmt Prefetch(int buffer, std::vector<Expr> indices) const;

  // Structural checks: types agree, indices match buffer ranks, loop variables
  // are bound, parallel loops are not nested, locals used by a parallel loop
  // stay inside it. Errors are kInternal (a lowering bug) naming the kernel.
  Status Verify() const;

  // Readable dump (keelc --dump-ir, tests); deterministic.
  std::string ToString() const;

 private:
  std::string name_;
  std::vector<KernelArg> args_;
  std::vector<int> arg_buffer_;
  std::vector<Buffer> buffers_;
  std::vector<std::string> var_names_;
  int64_t workspace_bytes_ = 0;
  int64_t next_var_ = 0;
  Stmt body_;
};

std::string ExprToString(const KernelFunc& kernel, const Expr& expr);

// Whether `e` reads variable `var` (anywhere in it, load indices included).
bool UsesVar(const Expr& e, int64_t var);
// The coefficient of variable `var` in integer expression `e` when `e` is affine
// in it: sums, differences and products by an integer constant of terms, where
// terms not using `var` (other variables, loads) count as constants; nullopt
// otherwise. The back ends' vector accesses and the GPU mapping's row vectors
// both decide by it.
std::optional<int64_t> VarCoefficient(const Expr& e, int64_t var);

// prefix + decimal index, e.g. IndexedName("in", 2) == "in2".
std::string IndexedName(const char* prefix, int64_t index);

// Floating types (f16 and bf16 included: they are storage types, widened to f32
// by the lowerings before any arithmetic).
bool IsFloat(DType dtype);
bool IsUnsigned(DType dtype);  // unsigned integers and bool (zero-extended, unsigned compares)
bool IsSupportedKernelDType(DType dtype);  // every type of keel/dtype_list.h

}  // namespace keel::codegen
