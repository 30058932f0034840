// vm/cuda/library_calls_cudnn_attention.h — a "keel.attention" kernel through
// cuDNN's fused attention engines (the backend API's scaled-dot-product
// pattern), the alternative to Keel's own kernel (attention_kernel.cuh);
// shared verbatim by the VM (vm/cuda/attention_kernel.cc chooses) and keelc
// --emit=cuda-host programs (see library_calls.h for why and how).
//
// Why: on Hopper cuDNN's attention runs on the warpgroup tensor-core
// instructions (wgmma) that Keel's mma.sync kernel does not use; on large
// batches it is the faster one (ViT-B/16 at batch 32: 25.5 against 35 us per
// attention, H200), on small ones Keel's (BERT-base at batch 1: 4 against 7 us).
// The VM times both and keeps the faster; the tuning file records the verdict
// (library_calls_engine_choice.h: "engine=keel" or the engine's identity).
//
// The graph (cuDNN 9's composite form of the pattern, every intermediate
// virtual and f32): S = Q K^T (matmul, f32 compute); S *= scale (a by-value
// scalar); S += mask (when there is one); softmax as max, subtract, exp, sum
// (and the log-sum-exp statistics the pattern carries, virtual), divide, the
// probabilities in the data type; Y = P V. Views become 4-D [b, h, rows, cols]
// tensors: the kernel's batch digits fold into two (AttentionGraphProblemOf),
// unit column strides, 16-byte alignment.
//
// Ownership: EngineGraph / EnginePlan as library_calls_cudnn_engine.h says.
// Errors: CallStatus naming the failing call; AttentionGraphProblemOf says why
// a problem has no graph form (the caller keeps Keel's kernel).
// Thread-safety: pure functions.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_ATTENTION_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_ATTENTION_H_

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "vm/cuda/library_calls_attention.h"
#include "vm/cuda/library_calls_cudnn_engine.h"

namespace keel::cuda_lib {

// Tensor unique ids in the graph and the variant pack.
constexpr int64_t kAttnUidQ = 1, kAttnUidK = 2, kAttnUidV = 3, kAttnUidY = 4, kAttnUidScale = 5, kAttnUidMask = 6;

// The attention as 4-D tensors: Q [b, h, sq, d], K^T [b, h, d, sk], V [b, h,
// sk, dv], Y [b, h, sq, dv], mask [b|1, h|1, sq|1, sk]; strides in elements
// (K's for the transposed view), offsets from each argument's base.
struct AttentionGraphProblem {
  ElementType type = ElementType::kF16;
  bool has_mask = false, mask_f32 = false;
  int64_t b = 1, h = 1, sq = 0, sk = 0, d = 0, dv = 0;
  int64_t q[4] = {}, kt[4] = {}, v[4] = {}, y[4] = {}, mask_dims[4] = {}, mask[4] = {};
  long long q_off = 0, k_off = 0, v_off = 0, y_off = 0, mask_off = 0;
  float scale = 1.f;
};

// The graph form of `a` (type t; `mask`: a.mv is a mask's view) into *p; false, with *why, when there is none:
// batch digits that do not fold into two, a column stride other than 1, head
// widths not a multiple of 8, or an offset or stride that breaks 16-byte alignment.
inline bool AttentionGraphProblemOf(const AttentionArgs& a, ElementType t, bool mask, AttentionGraphProblem* p,
                                    std::string* why) {
  const AttentionView* views[5] = {&a.qv, &a.kv, &a.vv, &a.yv, &a.mv};
  const int nviews = mask ? 5 : 4;
  // Digits of extent 1 drop out; a digit folds into the one inside it when every
  // view steps over the inner one whole.
  std::vector<int64_t> radix;
  std::vector<std::vector<int64_t>> stride(static_cast<size_t>(nviews));
  for (int d = 0; d < a.digits; ++d) {
    if (a.radix[d] == 1) continue;
    radix.push_back(a.radix[d]);
    for (int i = 0; i < nviews; ++i) stride[static_cast<size_t>(i)].push_back(views[i]->batch[d]);
  }
  for (size_t d = 0; d + 1 < radix.size() && radix.size() > 2;) {
    bool folds = true;
    for (int i = 0; i < nviews; ++i) {
      const std::vector<int64_t>& s = stride[static_cast<size_t>(i)];
      folds = folds && s[d] == s[d + 1] * radix[d + 1];
    }
    if (!folds) {
      ++d;
      continue;
    }
    radix[d] *= radix[d + 1];
    radix.erase(radix.begin() + static_cast<long>(d) + 1);
    for (int i = 0; i < nviews; ++i) {
      std::vector<int64_t>& s = stride[static_cast<size_t>(i)];
      s[d] = s[d + 1];
      s.erase(s.begin() + static_cast<long>(d) + 1);
    }
  }
  if (radix.size() > 2) {
    *why = "batch digits that do not fold into two";
    return false;
  }
  while (radix.size() < 2) {  // leading digits of extent 1
    radix.insert(radix.begin(), 1);
    for (std::vector<int64_t>& s : stride) s.insert(s.begin(), 0);
  }
  const int64_t elem = InfoOf(t).bytes, mask_elem = a.mask_f32 ? 4 : elem;
  for (int i = 0; i < 4; ++i) {
    if (views[i]->col != 1) {
      *why = "a column stride other than 1";
      return false;
    }
  }
  if (a.d % 8 != 0 || a.dv % 8 != 0) {
    *why = "head widths not a multiple of 8";
    return false;
  }
  auto aligned = [](long long v, int64_t e) { return (v * e) % 16 == 0; };
  for (int i = 0; i < nviews; ++i) {
    const int64_t e = i == 4 ? mask_elem : elem;
    bool ok = aligned(views[i]->offset, e) && aligned(views[i]->row, e);
    for (int64_t s : stride[static_cast<size_t>(i)]) ok = ok && aligned(s, e);
    if (!ok) {
      *why = "an offset or stride that is not a multiple of 16 bytes";
      return false;
    }
  }
  if (mask && a.mv.col != 1) {
    *why = "a mask column stride other than 1";
    return false;
  }
  p->type = t;
  p->has_mask = mask;
  p->mask_f32 = a.mask_f32 != 0;
  p->b = radix[0];
  p->h = radix[1];
  p->sq = a.sq;
  p->sk = a.sk;
  p->d = a.d;
  p->dv = a.dv;
  p->scale = a.scale;
  auto set = [&](int i, int64_t* out) {
    out[0] = stride[static_cast<size_t>(i)][0];
    out[1] = stride[static_cast<size_t>(i)][1];
    out[2] = views[i]->row;
    out[3] = 1;
  };
  set(0, p->q);
  set(2, p->v);
  set(3, p->y);
  set(1, p->kt);
  p->kt[2] = 1;  // K^T: [b, h, d, sk]
  p->kt[3] = a.kv.row;
  p->q_off = a.qv.offset;
  p->k_off = a.kv.offset;
  p->v_off = a.vv.offset;
  p->y_off = a.yv.offset;
  if (mask) {
    set(4, p->mask);
    p->mask_off = a.mv.offset;
    // Broadcast axes (stride 0) are extent 1 in the graph.
    const int64_t full[4] = {p->b, p->h, p->sq, p->sk};
    for (int i = 0; i < 4; ++i) p->mask_dims[i] = i < 3 && p->mask[i] == 0 ? 1 : full[i];
    for (int i = 2; i >= 0; --i) {
      if (p->mask_dims[i] == 1) p->mask[i] = p->mask_dims[i + 1] * p->mask[i + 1];
    }
  }
  return true;
}

// The problem's tuning key: "attention|<type>|b,h,sq,sk,d,dv|q..|k..|v..|y..[|mask..]"
// (every extent and stride the choice depends on; no spaces).
inline std::string AttentionProblemKey(const AttentionGraphProblem& p) {
  auto list = [](const int64_t* v) {
    return std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + "," + std::to_string(v[3]);
  };
  const int64_t dims[4] = {p.b, p.h, p.sq, p.sk};
  std::string k = std::string("attention|") + InfoOf(p.type).name + "|" + list(dims) + "," + std::to_string(p.d) + "," +
                  std::to_string(p.dv) + "|q" + list(p.q) + "|k" + list(p.kt) + "|v" + list(p.v) + "|y" + list(p.y);
  if (p.has_mask) k += std::string("|mask") + (p.mask_f32 ? "f32" : "") + list(p.mask_dims) + ":" + list(p.mask);
  return k;
}

// The operation graph of `p` into *g (DestroyEngineGraph after, also on failure).
inline CallStatus BuildAttentionGraph(cudnnHandle_t h, const AttentionGraphProblem& p, EngineGraph* g) {
  auto make = [&](cudnnBackendDescriptorType_t t, cudnnBackendDescriptor_t* out) {
    return AddEngineDescriptor(g, t, out);
  };
  const cudnnDataType_t io = CudnnDataTypeOf(p.type), f32 = CUDNN_DATA_FLOAT;
  auto tensor = [&](cudnnDataType_t dt, std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t uid,
                    bool is_virtual, cudnnBackendDescriptor_t* t) {
    return AddEngineTensor(g, dt, dims, strides, uid, is_virtual, false, t);
  };
  std::vector<cudnnBackendDescriptor_t> ops;
  auto op = [&](cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t desc_attr,
                std::vector<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> tensors) -> CallStatus {
    cudnnBackendDescriptor_t o = nullptr;
    KEEL_LIB_RETURN_IF_FAILED(make(type, &o));
    KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(o, desc_attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc,
                                            "cudnnBackendSetAttribute(attention operation)"));
    for (auto& [name, t] : tensors) {
      KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(o, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t,
                                              "cudnnBackendSetAttribute(attention operand)"));
    }
    KEEL_LIB_RETURN_IF_FAILED(FinalizeEngineDesc(o, "cudnnBackendFinalize(attention operation)"));
    ops.push_back(o);
    return {};
  };
  // An operation's own descriptor (matmul, pointwise, reduction): its mode where
  // it has one (`mode` null: none), f32 compute, finalized.
  auto f32_desc = [&](cudnnBackendDescriptorType_t type, cudnnBackendAttributeName_t mode_attr,
                      cudnnBackendAttributeType_t mode_type, const void* mode, cudnnBackendAttributeName_t comp_attr,
                      cudnnBackendDescriptor_t* d) -> CallStatus {
    KEEL_LIB_RETURN_IF_FAILED(make(type, d));
    if (mode != nullptr) {
      KEEL_LIB_RETURN_IF_FAILED(
          SetEngineAttr(*d, mode_attr, mode_type, 1, mode, "cudnnBackendSetAttribute(attention operation mode)"));
    }
    KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(*d, comp_attr, CUDNN_TYPE_DATA_TYPE, 1, &f32,
                                            "cudnnBackendSetAttribute(attention compute type)"));
    return FinalizeEngineDesc(*d, "cudnnBackendFinalize(attention operation descriptor)");
  };
  auto matmul = [&](cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) -> CallStatus {
    cudnnBackendDescriptor_t m = nullptr;
    KEEL_LIB_RETURN_IF_FAILED(f32_desc(CUDNN_BACKEND_MATMUL_DESCRIPTOR, CUDNN_ATTR_MATMUL_COMP_TYPE,
                                       CUDNN_TYPE_DATA_TYPE, nullptr, CUDNN_ATTR_MATMUL_COMP_TYPE, &m));
    return op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, m, CUDNN_ATTR_OPERATION_MATMUL_DESC,
              {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, a}, {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b},
               {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c}});
  };
  auto pointwise = [&](cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                       cudnnBackendDescriptor_t y) -> CallStatus {
    cudnnBackendDescriptor_t pw = nullptr;
    KEEL_LIB_RETURN_IF_FAILED(f32_desc(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, CUDNN_ATTR_POINTWISE_MODE,
                                       CUDNN_TYPE_POINTWISE_MODE, &mode, CUDNN_ATTR_POINTWISE_MATH_PREC, &pw));
    std::vector<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> t = {
        {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x}, {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y}};
    if (b != nullptr) t.push_back({CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b});
    return op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, pw, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, t);
  };
  auto reduction = [&](cudnnReduceTensorOp_t r, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) -> CallStatus {
    cudnnBackendDescriptor_t rd = nullptr;
    KEEL_LIB_RETURN_IF_FAILED(f32_desc(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, CUDNN_ATTR_REDUCTION_OPERATOR,
                                       CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &r, CUDNN_ATTR_REDUCTION_COMP_TYPE, &rd));
    return op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, rd, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
              {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x}, {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y}});
  };
  const std::vector<int64_t> s_dims = {p.b, p.h, p.sq, p.sk}, s_str = {p.h * p.sq * p.sk, p.sq * p.sk, p.sk, 1};
  const std::vector<int64_t> r_dims = {p.b, p.h, p.sq, 1}, r_str = {p.h * p.sq, p.sq, 1, 1};
  auto four = [](const int64_t* v) { return std::vector<int64_t>(v, v + 4); };
  cudnnBackendDescriptor_t q, kt, v, y, scale, mask = nullptr;
  KEEL_LIB_RETURN_IF_FAILED(tensor(io, {p.b, p.h, p.sq, p.d}, four(p.q), kAttnUidQ, false, &q));
  KEEL_LIB_RETURN_IF_FAILED(tensor(io, {p.b, p.h, p.d, p.sk}, four(p.kt), kAttnUidK, false, &kt));
  KEEL_LIB_RETURN_IF_FAILED(tensor(io, {p.b, p.h, p.sk, p.dv}, four(p.v), kAttnUidV, false, &v));
  KEEL_LIB_RETURN_IF_FAILED(tensor(io, {p.b, p.h, p.sq, p.dv}, four(p.y), kAttnUidY, false, &y));
  KEEL_LIB_RETURN_IF_FAILED(AddEngineTensor(g, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, kAttnUidScale, false, true, &scale));
  if (p.has_mask) {
    KEEL_LIB_RETURN_IF_FAILED(
        tensor(p.mask_f32 ? f32 : io, four(p.mask_dims), four(p.mask), kAttnUidMask, false, &mask));
  }
  // The intermediates: virtual, f32 (the probabilities in the data type).
  int64_t uid = 100;
  auto scores = [&](cudnnDataType_t dt, cudnnBackendDescriptor_t* t) { return tensor(dt, s_dims, s_str, ++uid, true, t); };
  auto rows = [&](cudnnBackendDescriptor_t* t) { return tensor(f32, r_dims, r_str, ++uid, true, t); };
  cudnnBackendDescriptor_t s, scaled, masked = nullptr, mx, shifted, e, sum, log_sum, stats, probs;
  KEEL_LIB_RETURN_IF_FAILED(scores(f32, &s));
  KEEL_LIB_RETURN_IF_FAILED(scores(f32, &scaled));
  if (p.has_mask) KEEL_LIB_RETURN_IF_FAILED(scores(f32, &masked));
  KEEL_LIB_RETURN_IF_FAILED(rows(&mx));
  KEEL_LIB_RETURN_IF_FAILED(scores(f32, &shifted));
  KEEL_LIB_RETURN_IF_FAILED(scores(f32, &e));
  KEEL_LIB_RETURN_IF_FAILED(rows(&sum));
  KEEL_LIB_RETURN_IF_FAILED(rows(&log_sum));
  KEEL_LIB_RETURN_IF_FAILED(rows(&stats));
  KEEL_LIB_RETURN_IF_FAILED(scores(io, &probs));

  KEEL_LIB_RETURN_IF_FAILED(matmul(q, kt, s));
  KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_MUL, s, scale, scaled));
  cudnnBackendDescriptor_t logits = scaled;
  if (p.has_mask) {
    KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_ADD, scaled, mask, masked));
    logits = masked;
  }
  KEEL_LIB_RETURN_IF_FAILED(reduction(CUDNN_REDUCE_TENSOR_MAX, logits, mx));
  KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_SUB, logits, mx, shifted));
  KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, e));
  KEEL_LIB_RETURN_IF_FAILED(reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum));
  // The statistics (virtual): the fused engines match the pattern with them
  // (measured: without them cuDNN 9.14 offers one configuration that does not run).
  KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, log_sum));
  KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_ADD, mx, log_sum, stats));
  KEEL_LIB_RETURN_IF_FAILED(pointwise(CUDNN_POINTWISE_DIV, e, sum, probs));
  KEEL_LIB_RETURN_IF_FAILED(matmul(probs, v, y));

  KEEL_LIB_RETURN_IF_FAILED(make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph));
  KEEL_LIB_RETURN_IF_FAILED(SetEngineAttr(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                          static_cast<int64_t>(ops.size()), ops.data(),
                                          "cudnnBackendSetAttribute(OPERATIONGRAPH_OPS)"));
  // The deprecated handle attribute, as BuildEngineGraph sets it.
  (void)cudnnBackendSetAttribute(g->graph, static_cast<cudnnBackendAttributeName_t>(800), CUDNN_TYPE_HANDLE, 1, &h);
  return FinalizeEngineDesc(g->graph, "cudnnBackendFinalize(attention graph)");
}

// The numerics an attention's engines must keep: half data, f32 accumulation.
inline EngineNumerics AttentionNumerics(const AttentionGraphProblem& p) { return EngineNumerics(p.type, false); }

// Queues the attention with `plan` on the handle's stream: the arguments' base
// pointers (mask null without one), *scale (a host value that stays put while
// the pack lives) and `ws` holding the plan's workspace.
inline cudnnStatus_t AttentionEngineExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, EngineVariantPack* vp,
                                            const AttentionGraphProblem& p, const void* q, const void* k,
                                            const void* v, const void* mask, void* y, const float* scale, void* ws) {
  const int64_t e = InfoOf(p.type).bytes, me = p.mask_f32 ? 4 : e;
  auto at = [](const void* base, long long off, int64_t bytes) {
    return static_cast<void*>(const_cast<char*>(static_cast<const char*>(base)) + off * bytes);
  };
  const int64_t uids[6] = {kAttnUidQ, kAttnUidK, kAttnUidV, kAttnUidY, kAttnUidScale, kAttnUidMask};
  void* data[6] = {at(q, p.q_off, e), at(k, p.k_off, e), at(v, p.v_off, e), at(y, p.y_off, e),
                   const_cast<float*>(scale), p.has_mask ? at(mask, p.mask_off, me) : nullptr};
  return EngineExecuteTensors(h, plan, vp, p.has_mask ? 6 : 5, uids, data, ws);
}

// The trace name of the engine call, e.g. "cudnnBackendExecute engine=8
// knobs=... workspace=256 (attention)".
inline std::string AttentionEngineCallName(const EngineId& id, uint64_t workspace) {
  return "cudnnBackendExecute " + EngineIdText(id) + " workspace=" + std::to_string(workspace) + " (attention)";
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_CUDNN_ATTENTION_H_
