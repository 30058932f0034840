// vm/cuda/cudnn_engine_conv.cc — see cudnn_engine_conv.h. The backend-API calls
// are vm/cuda/library_calls_cudnn_engine.h's; this file owns their results.
#include "vm/cuda/cudnn_engine_conv.h"

#ifdef KEEL_HAVE_CUDNN

#include "vm/cuda/cuda_errors.h"

namespace keel::vm_internal {

namespace cl = cuda_lib;

Status CudnnEngineConv::BuildGraph(const cl::ConvProblem& p) {
  if (!cl::EngineProblemSupported(p)) {
    return Unsupported(p.nhwc && p.x.size() != 4 ? "cuDNN engines: NHWC is 2-D only"
                       : p.transposed           ? "cuDNN engines: forward convolutions only"
                                                : "cuDNN engines: only 2-D and 3-D convolutions (tensors of rank 4 or 5)");
  }
  return LibraryCallStatus(cl::BuildEngineGraph(h_, p, &graph_)).WithContext("cuDNN engines: building the graph");
}

Result<std::unique_ptr<CudnnEngineConv>> CudnnEngineConv::Create(cudnnHandle_t handle, const cl::ConvProblem& p,
                                                                  uint64_t max_workspace, EngineSearch search) {
  std::unique_ptr<CudnnEngineConv> c(new CudnnEngineConv(handle));
  KEEL_RETURN_IF_ERROR(c->BuildGraph(p));
  KEEL_RETURN_IF_ERROR(
      LibraryCallStatus(cl::EngineCandidates(handle, p, c->graph_, max_workspace, search, &c->plans_, &c->summary_)));
  if (c->plans_.empty()) return Unsupported("cuDNN engines: no usable engine configuration (" + c->summary_ + ")");
  return c;
}

Result<std::unique_ptr<CudnnEngineConv>> CudnnEngineConv::CreateFor(cudnnHandle_t handle, const cl::ConvProblem& p,
                                                                     uint64_t max_workspace, const cl::EngineId& id) {
  std::unique_ptr<CudnnEngineConv> c(new CudnnEngineConv(handle));
  KEEL_RETURN_IF_ERROR(c->BuildGraph(p));
  cl::EnginePlan plan;
  const cl::CallStatus st = cl::EnginePlanOf(handle, p, c->graph_, id, max_workspace, &plan);
  if (!st.ok()) {
    cl::DestroyEnginePlan(plan);
    return Unsupported("cuDNN engine configuration " + cl::EngineIdText(id) + " is not offered for this convolution (" +
                       LibraryCallStatus(st).message() + ")");
  }
  c->plans_.push_back(std::move(plan));
  c->summary_ = "tuned";
  return c;
}

CudnnEngineConv::~CudnnEngineConv() {
  cl::DestroyEngineVariantPack(pack_);
  for (cl::EnginePlan& p : plans_) cl::DestroyEnginePlan(p);
  cl::DestroyEngineGraph(graph_);
}

void CudnnEngineConv::Keep(size_t i) {
  if (i >= plans_.size()) return;
  for (size_t j = 0; j < plans_.size(); ++j) {
    if (j != i) cl::DestroyEnginePlan(plans_[j]);
  }
  cl::EnginePlan kept = std::move(plans_[i]);
  plans_.clear();
  plans_.push_back(std::move(kept));
}

}  // namespace keel::vm_internal

#endif  // KEEL_HAVE_CUDNN
