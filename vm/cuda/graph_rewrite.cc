// vm/cuda/graph_rewrite.cc — see graph_rewrite.h.
#include "vm/cuda/graph_rewrite.h"

#include <algorithm>
#include <string>
#include <vector>

#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/cuda_errors.h"

namespace keel::vm_internal {
namespace {

Status GraphCall(cudaError_t e, const char* call) {
  if (e != cudaSuccess) (void)cudaGetLastError();
  return CudaStatus(e, call);
}

// The nodes an edge list names, in one direction (dependencies or dependents).
template <typename Query>
Status Neighbours(cudaGraphNode_t node, Query query, std::vector<cudaGraphNode_t>* out, const char* call) {
  size_t n = 0;
  KEEL_RETURN_IF_ERROR(GraphCall(query(node, nullptr, nullptr, &n), call));
  out->resize(n);
  if (n != 0) KEEL_RETURN_IF_ERROR(GraphCall(query(node, out->data(), nullptr, &n), call));
  out->resize(n);
  return Status::Ok();
}

}  // namespace

Status MemsetNodesAsKernels(cudaGraph_t graph, CUfunction fill, const void* private_begin, const void* private_end,
                            int* replaced, int* lifted) {
  if (replaced != nullptr) *replaced = 0;
  if (lifted != nullptr) *lifted = 0;
  if (Driver().GraphAddKernelNode == nullptr || fill == nullptr) return Status::Ok();
  size_t count = 0;
  KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes"));
  std::vector<cudaGraphNode_t> nodes(count);
  KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes"));
  struct Memset {
    cudaGraphNode_t node;
    cudaMemsetParams p;
    const char* begin() const { return static_cast<const char*>(p.dst); }
    const char* end() const { return begin() + p.width * p.elementSize; }
  };
  std::vector<Memset> memsets;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType"));
    if (type != cudaGraphNodeTypeMemset) continue;
    cudaMemsetParams p{};
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphMemsetNodeGetParams(node, &p), "cudaGraphMemsetNodeGetParams"));
    if (p.height != 1 || (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) || p.width == 0) continue;
    memsets.push_back({node, p});
  }
  // Liftable: inside the private slices, and no other memset in the graph touches its bytes.
  const auto* lo = static_cast<const char*>(private_begin);
  const auto* hi = static_cast<const char*>(private_end);
  auto liftable = [&](const Memset& m) {
    if (lo == nullptr || m.begin() < lo || m.end() > hi) return false;
    for (const Memset& o : memsets) {
      if (o.node != m.node && o.begin() < m.end() && m.begin() < o.end()) return false;
    }
    return true;
  };
  // The liftable clears become one fill at the head of the graph when they write one value
  // in one element size, aligned alike (cuDNN's attention clears 4 bytes); else all stay.
  std::vector<const Memset*> head;
  for (const Memset& m : memsets) {
    if (liftable(m)) head.push_back(&m);
  }
  for (const Memset* m : head) {
    if (m->p.value != head[0]->p.value || m->p.elementSize != head[0]->p.elementSize ||
        (m->begin() - lo) % m->p.elementSize != 0) {
      head.clear();
      break;
    }
  }
  auto add_fill = [&](const void* dst, unsigned value, unsigned long long n, unsigned element_size,
                      const std::vector<cudaGraphNode_t>& deps, CUgraphNode* kernel) {
    void* d = const_cast<void*>(dst);
    int es = static_cast<int>(element_size);
    void* args[] = {&d, &value, &n, &es};
    CUDA_KERNEL_NODE_PARAMS kp{};
    kp.func = fill;
    kp.blockDimX = 256;
    kp.gridDimX = static_cast<unsigned>(std::min<unsigned long long>((n + 255) / 256, 1024));
    kp.gridDimY = kp.gridDimZ = kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = args;
    return CuStatus(Driver().GraphAddKernelNode(kernel, reinterpret_cast<CUgraph>(graph),
                                                reinterpret_cast<const CUgraphNode*>(deps.data()), deps.size(), &kp),
                    "cuGraphAddKernelNode");
  };
  // Edges from every node of `from` to every node of `to` that lacks one.
  std::vector<cudaGraphNode_t> existing;
  auto connect = [&](const std::vector<cudaGraphNode_t>& from, const std::vector<cudaGraphNode_t>& to) -> Status {
    for (cudaGraphNode_t t : to) {
      KEEL_RETURN_IF_ERROR(Neighbours(t, cudaGraphNodeGetDependencies, &existing, "cudaGraphNodeGetDependencies"));
      for (cudaGraphNode_t f : from) {
        if (std::find(existing.begin(), existing.end(), f) != existing.end()) continue;
        KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphAddDependencies(graph, &f, &t, nullptr, 1), "cudaGraphAddDependencies"));
      }
    }
    return Status::Ok();
  };
  std::vector<cudaGraphNode_t> deps, dependents;
  const char* span_lo = nullptr;
  const char* span_hi = nullptr;
  for (const Memset& m : memsets) {
    const bool to_head = std::find(head.begin(), head.end(), &m) != head.end();
    KEEL_RETURN_IF_ERROR(Neighbours(m.node, cudaGraphNodeGetDependencies, &deps, "cudaGraphNodeGetDependencies"));
    KEEL_RETURN_IF_ERROR(
        Neighbours(m.node, cudaGraphNodeGetDependentNodes, &dependents, "cudaGraphNodeGetDependentNodes"));
    if (!to_head) {
      CUgraphNode kernel = nullptr;
      KEEL_RETURN_IF_ERROR(add_fill(m.p.dst, m.p.value, m.p.width, m.p.elementSize, deps, &kernel));
      KEEL_RETURN_IF_ERROR(connect({reinterpret_cast<cudaGraphNode_t>(kernel)}, dependents));
    } else {
      // What came before the lifted clear still comes before what came after it.
      KEEL_RETURN_IF_ERROR(connect(deps, dependents));
      span_lo = span_lo == nullptr ? m.begin() : std::min(span_lo, m.begin());
      span_hi = std::max(span_hi, m.end());
    }
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphDestroyNode(m.node), "cudaGraphDestroyNode"));
    if (replaced != nullptr) ++*replaced;
    if (to_head && lifted != nullptr) ++*lifted;
  }
  if (!head.empty()) {
    size_t n = 0;
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphGetRootNodes(graph, nullptr, &n), "cudaGraphGetRootNodes"));
    std::vector<cudaGraphNode_t> roots(n);
    if (n != 0) KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphGetRootNodes(graph, roots.data(), &n), "cudaGraphGetRootNodes"));
    const unsigned es = head[0]->p.elementSize;
    CUgraphNode kernel = nullptr;
    KEEL_RETURN_IF_ERROR(add_fill(span_lo, head[0]->p.value, static_cast<unsigned long long>(span_hi - span_lo) / es,
                                  es, {}, &kernel));
    KEEL_RETURN_IF_ERROR(connect({reinterpret_cast<cudaGraphNode_t>(kernel)}, roots));
  }
  return Status::Ok();
}

}  // namespace keel::vm_internal
