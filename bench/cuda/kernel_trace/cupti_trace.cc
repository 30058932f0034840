// bench/cuda/kernel_trace/cupti_trace.cc — libkeel_cupti_trace.so: every kernel (and copy and
// memset) the GPU ran in a process, with its device start and end, including the kernels of
// replayed CUDA graphs, which no event-based timing can split. Loaded with LD_PRELOAD into any
// program (keel-cuda-time, a PyTorch script); writes one tab-separated line per record to the
// file named by KEEL_CUPTI_OUT (default cupti_trace.tsv) when the process exits:
//   K  start_ns  end_ns  stream  graph_id  graph_node_id  grid  block  name      (a kernel)
//   M  start_ns  end_ns  stream  graph_id  graph_node_id  bytes kind  memcpy|memset
// kernel_trace.py turns it into a per-replay table. A measuring tool: nothing in Keel links it.
// Build: see run.sh (needs CUPTI's headers and libcupti.so; the nvidia-cuda-cupti wheel has both).
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace {

std::FILE* g_out = nullptr;
std::mutex g_mutex;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

std::string Demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && d != nullptr ? d : name;
  std::free(d);
  // Tabs and newlines would break the table.
  for (char& c : s)
    if (c == '\t' || c == '\n') c = ' ';
  return s;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_Activity* rec = nullptr;
  while (g_out != nullptr && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      std::fprintf(g_out, "K\t%llu\t%llu\t%u\t%u\t%llu\t%dx%dx%d\t%dx%dx%d\t%s\n",
                   static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end), k->streamId,
                   k->graphId, static_cast<unsigned long long>(k->graphNodeId), k->gridX, k->gridY, k->gridZ,
                   k->blockX, k->blockY, k->blockZ, Demangled(k->name).c_str());
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      std::fprintf(g_out, "M\t%llu\t%llu\t%u\t%u\t%llu\t%llu\t%u\tmemcpy\n", static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->streamId, m->graphId,
                   static_cast<unsigned long long>(m->graphNodeId), static_cast<unsigned long long>(m->bytes),
                   unsigned(m->copyKind));
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      std::fprintf(g_out, "M\t%llu\t%llu\t%u\t%u\t%llu\t%llu\t0\tmemset\n", static_cast<unsigned long long>(m->start),
                   static_cast<unsigned long long>(m->end), m->streamId, m->graphId,
                   static_cast<unsigned long long>(m->graphNodeId), static_cast<unsigned long long>(m->bytes));
    }
  }
  std::free(buffer);
}

void Finish() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_out != nullptr) std::fclose(g_out);
  g_out = nullptr;
}

__attribute__((constructor)) void Start() {
  const char* path = std::getenv("KEEL_CUPTI_OUT");
  g_out = std::fopen(path != nullptr ? path : "cupti_trace.tsv", "w");
  if (g_out == nullptr) return;
  if (cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "cupti_trace: CUPTI would not start\n");
    return;
  }
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  std::atexit(Finish);
}

}  // namespace
