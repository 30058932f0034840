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

Status MemsetNodesAsKernels(cudaGraph_t graph, CUfunction fill, int* replaced) {
  if (replaced != nullptr) *replaced = 0;
  if (Driver().GraphAddKernelNode == nullptr || fill == nullptr) return Status::Ok();
  size_t count = 0;
  KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphGetNodes(graph, nullptr, &count), "cudaGraphGetNodes"));
  std::vector<cudaGraphNode_t> nodes(count);
  KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphGetNodes(graph, nodes.data(), &count), "cudaGraphGetNodes"));
  std::vector<cudaGraphNode_t> deps, dependents;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphNodeGetType(node, &type), "cudaGraphNodeGetType"));
    if (type != cudaGraphNodeTypeMemset) continue;
    cudaMemsetParams p{};
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphMemsetNodeGetParams(node, &p), "cudaGraphMemsetNodeGetParams"));
    if (p.height != 1 || (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) || p.width == 0) continue;
    KEEL_RETURN_IF_ERROR(Neighbours(node, cudaGraphNodeGetDependencies, &deps, "cudaGraphNodeGetDependencies"));
    KEEL_RETURN_IF_ERROR(Neighbours(node, cudaGraphNodeGetDependentNodes, &dependents, "cudaGraphNodeGetDependentNodes"));
    void* dst = p.dst;
    unsigned value = p.value;
    unsigned long long n = p.width;
    int element_size = static_cast<int>(p.elementSize);
    void* args[] = {&dst, &value, &n, &element_size};
    CUDA_KERNEL_NODE_PARAMS kp{};
    kp.func = fill;
    kp.blockDimX = 256;
    kp.gridDimX = static_cast<unsigned>(std::min<unsigned long long>((n + 255) / 256, 1024));
    kp.gridDimY = kp.gridDimZ = kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = args;
    CUgraphNode kernel = nullptr;
    KEEL_RETURN_IF_ERROR(CuStatus(Driver().GraphAddKernelNode(&kernel, reinterpret_cast<CUgraph>(graph),
                                                              reinterpret_cast<const CUgraphNode*>(deps.data()),
                                                              deps.size(), &kp),
                                  "cuGraphAddKernelNode"));
    const std::vector<cudaGraphNode_t> from(dependents.size(), reinterpret_cast<cudaGraphNode_t>(kernel));
    if (!dependents.empty()) {
      KEEL_RETURN_IF_ERROR(GraphCall(
          cudaGraphAddDependencies(graph, from.data(), dependents.data(), nullptr, dependents.size()),
          "cudaGraphAddDependencies"));
    }
    KEEL_RETURN_IF_ERROR(GraphCall(cudaGraphDestroyNode(node), "cudaGraphDestroyNode"));
    if (replaced != nullptr) ++*replaced;
  }
  return Status::Ok();
}

}  // namespace keel::vm_internal
