// compiler/frontend/op_schemas.h — the ops Keel imports and their NORMALIZED IR form.
//
// This is the contract between the frontend/passes and everything downstream
// (codegen, lowering, the reference evaluator). After the default pipeline's
// shape-inference pass every node is canonical (ir::CanonicalizeNode in
// compiler/ir/type_inference.h) and every value has a static TensorType.
// Ops keep their ONNX op_type names; Keel-specific ops are prefixed "keel.".
// Axis attributes are non-negative once canonical. Float attributes are
// doubles, int attributes int64, lists std::vector<int64_t>.
//
//  op                  inputs (canonical)             attributes (canonical, all present)
//  ------------------  -----------------------------  ----------------------------------------------------
//  Add Sub Mul Div Pow A, B (numpy broadcasting;     —      (Div on integers truncates toward zero)
//                      same dtype except Pow)
//  Relu Sigmoid Tanh   X                              —
//  Erf Sqrt Identity
//  Clip                X                              min, max (float; -inf/+inf when unbounded).
//                                                     Opset-11 min/max inputs are lifted when constant.
//  Cast                X                              to (string IR dtype name: "f32", "i64", ...)
//  Conv                X, W, [B]                      kernel_shape, strides, dilations (spatial),
//                                                     pads ([begin..., end...]), group, auto_pad="NOTSET"
//                                                     (auto_pad VALID → pads 0; SAME_* is Unsupported)
//  MaxPool             X                              kernel_shape, strides, pads, dilations, ceil_mode
//                                                     (0/1; padding never wins the max). Indices output
//                                                     and storage_order=1 are Unsupported.
//  AveragePool         X                              kernel_shape, strides, pads, ceil_mode,
//                                                     count_include_pad (0/1)
//  GlobalAveragePool   X                              —
//  Gemm                A, B, [C]                      alpha, beta (float), transA, transB (0/1);
//                                                     Y = alpha*A'B' + beta*C, C broadcast to [M,N]
//  MatMul              A, B                           — (numpy matmul, batch dims broadcast)
//  Softmax             X                              axis (opset-13 semantics: one axis; older models
//                                                     are accepted when axis is the last one)
//  LayerNormalization  X, Scale, [B]                  axis, epsilon; normalizes over dims [axis, rank).
//                                                     Mean/InvStdDev outputs are Unsupported.
//  BatchNormalization  X, scale, B, mean, var         epsilon (inference only; training_mode=1 is
//                                                     Unsupported). Folded away by batchnorm-folding.
//  Concat              X0, X1, ...                    axis
//  Flatten             X                              axis (0..rank)
//  Reshape             X                              shape (as given by ONNX: 0 copies, -1 infers),
//                                                     allowzero. The shape input is lifted when constant.
//  Transpose           X                              perm (default: reversed)
//  Slice               X                              starts, ends, axes, steps: one entry per sliced
//                                                     axis, clamped to the ONNX effective range, so
//                                                     element i of axis a is start + i*step.
//  Gather              data, indices (i32/i64)        axis; negative indices wrap
//  Shape               X                              start, end (clamped)  → i64[end-start]
//  Unsqueeze Squeeze   X                              axes (sorted; Unsqueeze axes index the output)
//  ReduceMean          X                              axes (sorted; all when absent), keepdims
//  Dropout             X                              — (inference: identity; removed by simplify)
//  Constant            —                              never a node: becomes a constant Value
//
// Keel ops produced by passes:
//  keel.Reshape        X                              shape (final static output shape). A view: no
//                                                     kernel; lowering emits alloc_tensor on X's storage.
//                                                     Produced from Reshape, Flatten, Squeeze, Unsqueeze.
//  keel.Fused          the group's external inputs    keel.pattern, keel.anchor (see
//                                                     compiler/passes/fusion.h); body() is the group.
//
// Thread-safety: the functions below are pure.
#pragma once

#include <string>
#include <vector>

namespace keel::frontend {

// ONNX op types the importer accepts (sorted).
const std::vector<std::string>& SupportedOnnxOps();
bool IsSupportedOnnxOp(const std::string& op_type);

}  // namespace keel::frontend
