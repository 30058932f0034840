// compiler/ops/elementwise_support.h — what the elementwise op families share:
// dtype classes, the broadcasting type rule, constants of an operand's type and
// the registration helper (internal to compiler/ops).
//
// An elementwise OpDef is: versions, the dtypes its data inputs accept, how the
// output dtype follows from them, and its scalar expression (op_def.h ScalarFn).
// The type rule broadcasts every present input (numpy rules) and checks dtypes,
// so each op states only what differs.
#pragma once

#include <string>
#include <vector>

#include "compiler/ops/op_def.h"
#include "compiler/ops/registry.h"

namespace keel::ops {

// Sets of dtypes an op accepts (bit flags).
enum TypeClass : unsigned {
  kFloatTypes = 1u << 0,     // f16, bf16, f32, f64
  kSignedTypes = 1u << 1,    // i8 ... i64
  kUnsignedTypes = 1u << 2,  // u8 ... u64
  kBoolType = 1u << 3,
  kIntTypes = kSignedTypes | kUnsignedTypes,
  kNumericTypes = kFloatTypes | kIntTypes,
  kAllTypes = kNumericTypes | kBoolType,
};
bool InClass(ir::DType dtype, unsigned classes);
std::string ClassText(unsigned classes);  // "float", "integer", "numeric", ...

// How an elementwise op's output dtype follows from its inputs.
enum class OutputType : uint8_t {
  kSameAsFirst,  // input 0's dtype (arithmetic, activations)
  kBool,         // comparisons, IsNaN, logic
};

struct ElementwiseSpec {
  std::string name;
  std::vector<int> versions;
  unsigned types = kFloatTypes;             // accepted dtypes of the data inputs
  OutputType output = OutputType::kSameAsFirst;
  // Inputs from this index on are not data inputs (Where's condition is index 0:
  // use first_data = 1; Pow's exponent: same_dtype = false).
  size_t first_data = 0;
  bool same_dtype = true;                   // every data input has input first_data's dtype
  size_t min_inputs = 1, max_inputs = 1;
  bool commutative = false;
  bool identity_like = false;               // output = input 0 (Identity)
  EpilogueRole epilogue = EpilogueRole::kNone;
  // Non-empty: the op keeps f32 under mixed precision (HalfPolicy::kKeepF32), for this reason.
  std::string keep_f32_reason;
  ScalarFn scalar;
  NormalizeFn normalize;                    // optional
  CanonicalizeFn canonicalize;              // optional
};

// Registers an elementwise op (type rule: broadcast + the checks above).
void AddElementwise(Registry& r, ElementwiseSpec spec);

// The broadcast of every present input's shape (InvalidArgument naming the node).
Result<std::vector<int64_t>> BroadcastInputs(const ir::Node& node);

// A constant of dtype `t` (a float constant for floating types, rounded for integers).
codegen::Expr ConstOf(double value, ir::DType t);

}  // namespace keel::ops
