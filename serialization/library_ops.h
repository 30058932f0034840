// serialization/library_ops.h — the contract for library kernels (KernelKind library).
//
// A library kernel is a kernel-table entry whose work is done by a vendor library
// the VM links (cuBLAS, cuDNN) instead of generated code. The compiler (the
// NVPTX/CUDA back end) writes Kernel{kind = library, device = cuda, library_op,
// args, attrs, workspace_bytes}; the CUDA VM (vm/cuda/) reads them at load,
// validates them against this header, builds descriptors/plans once and calls the
// library on every invoke. This header is that contract: every library_op string,
// its argument order, its attribute keys with their types, and its exact
// semantics. It has no code dependencies: constants, comments and one
// constexpr rule (EpilogueArgOrder).
//
// General rules (all ops):
//   * Arguments are tensor registers in the order listed; `[x]` marks an optional
//     argument whose presence is stated by an attribute (never guessed from the
//     argument count alone, except where said). Every argument is a dense,
//     row-major (C-order) tensor on the cuda device. Element type: the
//     tensors of cublas.gemm, cudnn.conv2d, cudnn.conv_transpose and
//     cudnn.pool2d (not the u8
//     workspace) are all f32, all f16 or all bf16 — the argument dtypes say
//     which (no attribute); any other type or a mix is kUnsupported, except
//     cublas.gemm's Y, bias and residual in f32 with half A and B (cuBLASLt's
//     D in f32).
//   * Attributes are stored sorted by key (the writer sorts them). Each key uses
//     exactly one of ser::AttrDesc's fields: "ints" (int64 list, scalars are
//     one-element lists), "floats" (double list) or "str". A missing optional
//     attribute takes the default given here; an unknown key, a missing required
//     key, a wrong type or an inconsistent value (shapes that do not match the
//     arguments) makes VM creation fail with kInvalidExecutable naming the kernel
//     and the key; a valid but unimplemented combination gives kUnsupported.
//   * Outputs never alias inputs unless said.
//   * Workspace: kernel.workspace_bytes may be 0 (recommended). The VM owns one
//     device workspace per VM, allocated at VM creation and sized to the largest
//     need of the algorithms it chose at load; it never allocates per call. When
//     workspace_bytes > 0 the LAST argument is a planned workspace tensor
//     (dtype u8, shape [workspace_bytes], access read_write) which the VM uses
//     when it is large enough for the chosen algorithm (else its own buffer).
//   * Numerics: fp32 math (f32 accumulation, f32 alpha/beta/clip values) for
//     every element type; half data runs on the tensor cores. TF32 tensor cores
//     are used for f32 data only when the VM was created with
//     VmOptions::allow_tf32 (default off).
#pragma once

namespace keel::ser::library_ops {

// ============================================================================
// "cublas.gemm" — batched matrix product with optional bias and epilogue.
//
//   args:  A, B, [bias], [residual], Y
//          (bias present iff attr has_bias == 1, residual iff has_residual == 1)
//   attrs (ints unless said):
//     "m", "n", "k"       required, >= 1
//     "batch"             default 1, >= 1
//     "trans_a"           default 0; 0: A_b is [m,k], 1: A_b is stored [k,m]
//     "trans_b"           default 0; 0: B_b is [k,n], 1: B_b is stored [n,k]
//     "stride_a"          elements between consecutive batches of A; default
//                         m*k when batch > 1; 0 = the same A for every batch
//     "stride_b"          likewise for B (default k*n; 0 = broadcast)
//     "stride_y"          likewise for Y (default m*n; must be m*n when batch>1)
//     "has_bias"          default 0
//     "bias_broadcast"    str, default "row":
//                           "row"  bias has n elements ([n] or [1,n]), added to
//                                  every row of every batch (ONNX Gemm C of shape
//                                  [N]/[1,N], MatMul+Add of a [N] vector);
//                                  requires beta == 1 (fold beta into the bias)
//                           "full" bias has m*n elements ([m,n]), added to every
//                                  batch, scaled by beta
//                         other ONNX broadcasts ([M,1], scalar) must be
//                         materialized by the compiler as "full".
//     "has_residual"      default 0; 1: the residual has batch*m*n elements (dense,
//                         Y's layout; it may be Y's own register) and is added
//                         before the epilogue with factor 1 (cuBLASLt's C
//                         matrix); not with a "full" bias (which is C)
//     "alpha"             floats, default 1.0
//     "beta"              floats, default 1.0 when has_bias else ignored
//     "epilogue"          str, default "": "" | "relu" | "gelu_tanh"
//                         (gelu_tanh = 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))),
//                         cuBLASLt's GELU; ONNX erf-Gelu is NOT this op's job)
//   semantics, for b in [0, batch), i in [0,m), j in [0,n):
//     Y[b][i][j] = epi( alpha * sum_p opA(b)[i][p] * opB(b)[p][j] + beta * bias(i,j)
//                       + residual[b][i][j] )
//     with opA(b) = A[b*stride_a ...] viewed [m,k] (or the transpose of the [k,m]
//     block when trans_a), same for B, bias(i,j) = bias[j] ("row") or
//     bias[i*n+j] ("full"), 0 without bias; residual 0 without it.
//   shapes: A, B and Y must hold at least the elements the strides address; Y's
//     element count must equal batch*m*n. The compiler typically writes
//     A=[batch,m,k] (or [m,k] with stride_a 0), Y=[batch,m,n] or [m,n].
//   row-major -> cuBLAS column-major mapping (how the VM calls it): a row-major
//     [r,c] matrix is the column-major [c,r] matrix with the same bytes, so
//     Y^T = opB^T * opA^T is computed column-major with
//       cuBLAS(A' = B, B' = A, m' = n, n' = m, k' = k,
//              transa' = trans_b, transb' = trans_a,
//              lda' = trans_b ? k : n, ldb' = trans_a ? m : k, ldc' = n),
//     and the "row" bias (one value per column j of row-major Y) becomes
//     cuBLASLt's per-row bias vector of the column-major result (EPILOGUE_BIAS).
// Where the optional operands stand in cublas.gemm, cudnn.conv2d,
// cudnn.conv_transpose and keel.conv2d: the two inputs (0, 1), then the bias
// and the residual where their attributes say they are present, then Y (a
// workspace, when the kernel has one, after it). -1: absent.
struct EpilogueArgs {
  int bias = -1, residual = -1, y = 2;
  constexpr int count() const { return y + 1; }  // without the workspace
};
constexpr EpilogueArgs EpilogueArgOrder(bool has_bias, bool has_residual) {
  EpilogueArgs a;
  int next = 2;
  if (has_bias) a.bias = next++;
  if (has_residual) a.residual = next++;
  a.y = next;
  return a;
}

inline constexpr char kCublasGemm[] = "cublas.gemm";

// ============================================================================
// "cudnn.conv2d" — 1-D, 2-D or 3-D convolution, NC<spatial>, with fused bias,
// residual and activation. (The name predates 1-D and 3-D support and is kept so
// that every executable written since stays loadable; an executable that says
// cudnn.conv2d with 4-D tensors means exactly what it always meant.)
//
//   args:  X, W, [bias], [residual], Y, [workspace]
//          X [N,C,D1..Dk]; W [K,C/group,R1..Rk]; bias [K] (iff has_bias == 1);
//          residual [N,K,O1..Ok] (iff has_residual == 1; may be the same register
//          as Y); Y [N,K,O1..Ok]; workspace as in the general rules. k, the
//          number of spatial dims, is rank(X) - 2 and must be 1, 2 or 3; W and Y
//          have X's rank.
//   attrs (ints unless said):
//     "pads"          2k values: every axis' begin, then every axis' end (ONNX
//                     order; 2-D: [top, left, bottom, right]), default 0s; cuDNN
//                     needs begin == end on every axis (else kUnsupported: pad
//                     explicitly)
//     "strides"       k values, default 1s
//     "dilations"     k values, default 1s
//     "group"         default 1; C and K divisible by it
//     "has_bias"      default 0
//     "has_residual"  default 0
//     "activation"    str, default "": "" | "relu" | "clip"
//     "clip_min", "clip_max"  floats, for "clip"; clip_min must be 0
//                     (cuDNN CLIPPED_RELU: ReLU6 and friends), else kUnsupported
//     "layout"        str, default "nchw": "nchw" | "nhwc". "nhwc" (2-D and 3-D):
//                     X, residual and Y are stored [N,H,W,C] and W [K,R,S,C/group]
//                     (3-D: [N,D,H,W,C] and [K,T,R,S,C/group]; channels last: the
//                     shapes above with axis 1 moved last); the semantics are
//                     unchanged. keelc --layout writes it.
//   semantics: Y = act( conv(X, W) + bias[k] + residual ), conv as ONNX Conv
//     (cross-correlation), Oi = floor((Di + pb_i + pe_i - d_i*(Ri-1) - 1)/s_i) + 1.
//     Y's shape must equal that (else kInvalidExecutable at load). Every
//     dimension and pad must fit int32 (cuDNN's descriptors).
//   common/conv_geometry.h is the one check of these rules (compiler, VM and host
//   emitter). The VM builds N-d cuDNN descriptors (rank 4 or 5; k == 1 runs as a
//   2-D convolution of unit height, which computes the same values), uses
//   cudnnConvolutionBiasActivationForward for relu (and for identity when it can
//   use IMPLICIT_PRECOMP_GEMM), otherwise convolution + add tensor + activation
//   (the VM's epilogue kernel); the algorithm is chosen once at load.
inline constexpr char kCudnnConv2d[] = "cudnn.conv2d";

// ============================================================================
// "cudnn.conv_transpose" — 1-D, 2-D or 3-D transposed convolution (ONNX
// ConvTranspose), NC<spatial>, with bias, residual and activation.
//
//   args:  X, W, [bias], [residual], Y, [workspace]
//          X [N,C,D1..Dk]; W [C,K/group,R1..Rk] (ONNX ConvTranspose's layout);
//          bias [K]; residual and Y [N,K,O1..Ok]; as cudnn.conv2d otherwise.
//   attrs: those of cudnn.conv2d with the same meaning and defaults (pads as
//     ConvTranspose's, symmetric only; "layout" "nhwc": X, residual and Y
//     channels last, W [C,R,S,K/group]).
//   semantics: Y = act( conv_transpose(X, W) + bias[k] + residual ), ONNX
//     ConvTranspose with the output_padding that Y's shape implies: the forward
//     convolution of a Y-shaped input by W (cudnn.conv2d's semantics and checks
//     with X and Y exchanged) must give X's shape, i.e.
//     Oi = s_i*(Di-1) + d_i*(Ri-1) + 1 - pb_i - pe_i + output_padding_i with
//     0 <= output_padding_i < s_i. The VM runs cudnnConvolutionBackwardData of
//     that forward convolution, then its epilogue kernel when there is a bias,
//     residual or activation.
inline constexpr char kCudnnConvTranspose[] = "cudnn.conv_transpose";

// ============================================================================
// "cudnn.pool2d" — 2-D pooling, NCHW.
//
//   args:  X [N,C,H,W], Y [N,C,P,Q]
//   attrs:
//     "mode"     str, required: "max" | "avg" (padding counted in the divisor,
//                ONNX count_include_pad=1) | "avg_exclude_pad" (ONNX default
//                AveragePool, count_include_pad=0)
//     "kernel"   ints [kh, kw], required (global pooling: [H, W])
//     "pads"     ints [top, left, bottom, right], default 0s; symmetric only
//     "strides"  ints [sh, sw], default [1,1]
//     "layout"   str, default "nchw": "nchw" | "nhwc" (X and Y stored [N,H,W,C])
//   semantics: as ONNX MaxPool/AveragePool with ceil_mode 0 and dilation 1;
//     Y's shape must be floor((H + pt + pb - kh)/sh) + 1 by floor((W + ...)/sw) + 1.
//     Max pooling ignores padded positions (-inf), like ONNX.
inline constexpr char kCudnnPool2d[] = "cudnn.pool2d";

// ============================================================================
// "keel.attention" — scaled dot-product attention over strided views, Keel's
// own kernel (vm/cuda/runtime_kernels.cu; set-up in
// vm/cuda/library_calls_attention.h). The compiler's keel.Attention
// (compiler/ops/fused_attention.h) with the same attributes.
//
//   args:  Q, K, V, [mask], Y      (mask present iff attribute "mask_view" is)
//          Q, K, V, Y all f16 or all bf16; the mask f32 or that type. Each is
//          any tensor holding the elements its view addresses.
//   attrs:
//     "batch"      ints, the batch's mixed-radix digits (outer first), at most
//                  kAttentionMaxBatchDigits values, each >= 1 (may be empty)
//     "dims"       ints [sq, sk, d, dv]: queries, keys, Q/K width, V/Y width;
//                  1 <= d, dv <= kAttentionMaxHeadWidth
//     "scale"      floats [scale]
//     "q_view", "k_view", "v_view", "y_view", ["mask_view"]
//                  ints [offset, one stride per batch digit, row, col] in
//                  elements: element (b, r, c) of the operand is element
//                  offset + sum_t digit_t(b) * stride_t + r * row + c * col of
//                  its argument. Rows/columns: Q (query, channel), K (key,
//                  channel), V (key, channel), Y (query, channel), mask
//                  (query, key). Strides may be 0 or negative; every addressed
//                  element must lie inside the argument (else
//                  kInvalidExecutable). Y's view should address each element
//                  once (the compiler guarantees it).
//   semantics, per flat batch index b, query i, key j, channel e:
//     s[j] = scale * sum_c Q(b,i,c) K(b,j,c) + mask(b,i,j)      (f32)
//     Y(b,i,e) = sum_j exp(s[j] - max s) V(b,j,e) / sum_j exp(s[j] - max s)
//     products on the tensor cores with f32 accumulation; the probabilities
//     are rounded to the data type before the product with V.
inline constexpr char kKeelAttention[] = "keel.attention";
inline constexpr int kAttentionMaxBatchDigits = 6;
inline constexpr int kAttentionMaxHeadWidth = 128;

// ============================================================================
// "keel.conv2d" — a 2-D channels-last convolution with few channels, Keel's own
// tensor-core kernel (vm/cuda/conv_kernel.cuh; set-up and limits in
// vm/cuda/library_calls_conv.h), where cuDNN's kernels, which tile many
// channels, waste most of their work.
//
//   args, attrs and semantics: those of cudnn.conv2d with "layout" "nhwc",
//     2 spatial dims and "group" 1 (X [N,H,W,C], W [K,R,S,C], bias [K],
//     residual and Y [N,OH,OW,K]; symmetric pads; the same geometry check,
//     common/conv_geometry.h), all tensors f16 or all bf16, no workspace.
//   limits: C a multiple of 8, at most kKeelConvMaxChannels; K even, at most
//     kKeelConvMaxOutputs;
//     the kernel window's shared memory within the VM's bound (library_calls_conv.h
//     ConvKernelRefusal); else kUnsupported at load. The compiler writes it
//     only inside those limits (compiler/driver/cuda_backend_conv.h).
//   numerics: products on the tensor cores with f32 accumulation; bias,
//     residual and activation in f32, rounded once to the data type.
inline constexpr char kKeelConv2d[] = "keel.conv2d";
inline constexpr int kKeelConvMaxChannels = 64;
inline constexpr int kKeelConvMaxOutputs = 32;

// Attribute keys (shared spellings).
namespace attr {
inline constexpr char kM[] = "m";
inline constexpr char kN[] = "n";
inline constexpr char kK[] = "k";
inline constexpr char kBatch[] = "batch";
inline constexpr char kTransA[] = "trans_a";
inline constexpr char kTransB[] = "trans_b";
inline constexpr char kStrideA[] = "stride_a";
inline constexpr char kStrideB[] = "stride_b";
inline constexpr char kStrideY[] = "stride_y";
inline constexpr char kHasBias[] = "has_bias";
inline constexpr char kBiasBroadcast[] = "bias_broadcast";
inline constexpr char kAlpha[] = "alpha";
inline constexpr char kBeta[] = "beta";
inline constexpr char kEpilogue[] = "epilogue";
inline constexpr char kPads[] = "pads";
inline constexpr char kStrides[] = "strides";
inline constexpr char kDilations[] = "dilations";
inline constexpr char kGroup[] = "group";
inline constexpr char kHasResidual[] = "has_residual";
inline constexpr char kActivation[] = "activation";
inline constexpr char kClipMin[] = "clip_min";
inline constexpr char kClipMax[] = "clip_max";
inline constexpr char kMode[] = "mode";
inline constexpr char kKernel[] = "kernel";
inline constexpr char kLayout[] = "layout";
inline constexpr char kDims[] = "dims";
inline constexpr char kScale[] = "scale";
inline constexpr char kQView[] = "q_view";
inline constexpr char kKView[] = "k_view";
inline constexpr char kVView[] = "v_view";
inline constexpr char kYView[] = "y_view";
inline constexpr char kMaskView[] = "mask_view";
}  // namespace attr

// String attribute values.
namespace value {
inline constexpr char kBiasRow[] = "row";
inline constexpr char kBiasFull[] = "full";
inline constexpr char kEpilogueNone[] = "";
inline constexpr char kEpilogueRelu[] = "relu";
inline constexpr char kEpilogueGeluTanh[] = "gelu_tanh";
inline constexpr char kActivationNone[] = "";
inline constexpr char kActivationRelu[] = "relu";
inline constexpr char kActivationClip[] = "clip";
inline constexpr char kPoolMax[] = "max";
inline constexpr char kPoolAvg[] = "avg";
inline constexpr char kPoolAvgExcludePad[] = "avg_exclude_pad";
inline constexpr char kLayoutNchw[] = "nchw";
inline constexpr char kLayoutNhwc[] = "nhwc";
}  // namespace value

}  // namespace keel::ser::library_ops
