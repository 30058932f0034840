// compiler/ops/recurrent.h — what the recurrent ops (RNN, GRU, LSTM) share
// between their definitions (recurrent.cc: canonical form, types, naive
// reference) and their kernel (recurrent_kernel.cc): the decoded node
// (RnnSpec) and the activation functions, as doubles and as kernel IR
// (internal to compiler/ops).
//
// Canonical form (after canonicalize): inputs X, W, R, [B], [sequence_lens],
// [initial_h] (+ [initial_c], [P] for LSTM), nullptr where omitted; attributes
// direction, hidden_size, layout, clip (absent: no clip), linear_before_reset
// (GRU), input_forget (LSTM), `activations` with one entry per function and
// direction (canonical names) and `act_alpha` / `act_beta` holding each
// activation's resolved alpha / beta (ONNX's activation_alpha/_beta lists are
// consumed in order by the functions that take the parameter; the others get
// the ONNX defaults of the corresponding op).
//
// Gate layout (rows of W, R and halves of B), as ONNX specifies: RNN [i],
// GRU [z, r, h], LSTM [i, o, f, c]; peepholes P [i, o, f].
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/kernel_ir.h"
#include "compiler/codegen/lower_context.h"
#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

enum class RnnKind : uint8_t { kRnn, kGru, kLstm };

struct RnnActivation {
  std::string name;  // canonical: "Sigmoid", "Tanh", "Relu", "HardSigmoid", ...
  double alpha = 0, beta = 0;
};

// Input positions (ONNX's).
enum RnnInput : size_t { kRnnX = 0, kRnnW, kRnnR, kRnnB, kRnnLens, kRnnH0, kRnnC0, kRnnP };

struct RnnSpec {
  RnnKind kind = RnnKind::kRnn;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;  // T, B, I, H
  int64_t dirs = 1;                                   // D
  int64_t gates = 1;                                  // G: 1, 3 or 4
  bool reverse[2] = {false, false};                   // direction d runs backwards in time
  int64_t layout = 0;                                 // 1: batch-major X, Y, Y_h, Y_c
  bool has_clip = false;
  double clip = 0;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM
  // acts[d * per_dir + k]: f (and g, h) of direction d.
  std::vector<RnnActivation> acts;
  int64_t per_dir = 1;  // activation functions per direction: RNN 1, GRU 2, LSTM 3
};

// Activations per direction of an op.
int64_t RnnFunctionsPerDirection(RnnKind kind);
RnnKind RnnKindOf(const ir::Node& node);

// Decodes a canonical node whose inputs are typed (validates shapes; errors
// name the node).
Result<RnnSpec> DecodeRnn(const ir::Node& node);

// Fills the canonical activations/act_alpha/act_beta attributes (idempotent).
Status CanonicalizeRnnActivations(ir::Node& node, RnnKind kind, int64_t dirs);

// The activation applied to x.
double ApplyActivation(const RnnActivation& a, double x);
codegen::Expr ActivationExpr(const RnnActivation& a, const codegen::Expr& x);

// Indices (row-major, as the layout attribute says) of X[t, b, i], Y[t, d, b, h]
// and Y_h/Y_c[d, b, h].
std::vector<codegen::Expr> RnnXIndex(const RnnSpec& s, codegen::Expr t, codegen::Expr b, codegen::Expr i);
std::vector<codegen::Expr> RnnYIndex(const RnnSpec& s, codegen::Expr t, codegen::Expr d, codegen::Expr b, codegen::Expr h);
std::vector<codegen::Expr> RnnStateIndex(const RnnSpec& s, codegen::Expr d, codegen::Expr b, codegen::Expr h);

// The kernel (kAnchor lowering) of a canonical RNN/GRU/LSTM node.
Result<codegen::Stmt> LowerRecurrent(codegen::LowerContext& ctx, const ir::Node& node,
                                     const std::vector<codegen::StoreFn>& stores);

}  // namespace keel::ops
