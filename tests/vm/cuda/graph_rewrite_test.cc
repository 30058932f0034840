// tests/vm/cuda/graph_rewrite_test.cc — vm/cuda/graph_rewrite.h: a captured graph's 1-D memset
// nodes become keel_fill kernel nodes (the runtime module's kernel) that write the same bytes in
// the same order; 2-D memsets stay; clears alone in the private workspace become one fill at the
// graph's head without losing the order of the nodes around them. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/vm/cuda/cuda_test_programs.h"
#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/graph_rewrite.h"

namespace keel::vm_internal {
extern const unsigned char kKeelRuntimeCubin[];
extern const unsigned long long kKeelRuntimeCubin_size;
}  // namespace keel::vm_internal

namespace keel::cudatest {
namespace {

using vm_internal::Driver;

int CountNodes(cudaGraph_t g, cudaGraphNodeType type) {
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetNodes(g, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> nodes(n);
  EXPECT_EQ(cudaGraphGetNodes(g, nodes.data(), &n), cudaSuccess);
  int c = 0;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t{};
    EXPECT_EQ(cudaGraphNodeGetType(node, &t), cudaSuccess);
    c += t == type;
  }
  return c;
}

// Fills bytes [offset, offset + count * element_size) of host memory as a memset node would.
void HostFill(std::vector<unsigned char>* bytes, size_t offset, unsigned value, size_t element_size, size_t count) {
  for (size_t i = 0; i < count; ++i) std::memcpy(bytes->data() + offset + i * element_size, &value, element_size);
}

// Instantiates `g` (then destroys it) and replays it three times on a zeroed `buf`: each must
// leave the bytes `expected`.
void ExpectReplaysWrite(cudaGraph_t g, unsigned char* buf, const std::vector<unsigned char>& expected) {
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(cudaMemset(buf, 0, expected.size()), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, nullptr), cudaSuccess);
    std::vector<unsigned char> got(expected.size());
    ASSERT_EQ(cudaMemcpy(got.data(), buf, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(got, expected) << "run " << run;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

TEST(GraphRewrite, MemsetNodesBecomeFillKernelsInOrder) {
  KEEL_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(Driver().status.ok()) << Driver().status.message();
  ASSERT_NE(Driver().GraphAddKernelNode, nullptr);
  ASSERT_NE(vm_internal::kKeelRuntimeCubin_size, 0u);
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);  // the runtime makes the primary context current
  CUmodule module = nullptr;
  ASSERT_EQ(Driver().ModuleLoadData(&module, vm_internal::kKeelRuntimeCubin), CUDA_SUCCESS);
  CUfunction fill = nullptr;
  ASSERT_EQ(Driver().ModuleGetFunction(&fill, module, "keel_fill"), CUDA_SUCCESS);

  constexpr size_t kBytes = 1 << 20;  // more than one grid-stride pass of 1,024 x 256 bytes
  unsigned char* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, kBytes), cudaSuccess);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  // A chain of overlapping fills: the result depends on their order. Element sizes 4, 2, a 2-D
  // fill (kept), then 1.
  struct Fill {
    size_t offset, element_size, width, height, pitch;
    unsigned value;
  };
  const Fill fills[] = {{0, 4, kBytes / 4, 1, 0, 0x3f800001u},
                        {1000, 2, 300000, 1, 0, 0xbeefu},
                        {4096, 1, 100, 3, 512, 0x11u},
                        {1500, 1, 999, 1, 0, 0x77u}};
  std::vector<unsigned char> expected(kBytes);
  cudaGraphNode_t prev = nullptr;
  for (const Fill& f : fills) {
    cudaMemsetParams p{};
    p.dst = buf + f.offset;
    p.value = f.value;
    p.elementSize = static_cast<unsigned>(f.element_size);
    p.width = f.width;
    p.height = f.height;
    p.pitch = f.pitch;
    cudaGraphNode_t node = nullptr;
    ASSERT_EQ(cudaGraphAddMemsetNode(&node, g, prev != nullptr ? &prev : nullptr, prev != nullptr ? 1 : 0, &p),
              cudaSuccess);
    prev = node;
    for (size_t row = 0; row < f.height; ++row)
      HostFill(&expected, f.offset + row * f.pitch, f.value, f.element_size, f.width);
  }
  int replaced = -1;
  const Status s = vm_internal::MemsetNodesAsKernels(g, fill, nullptr, nullptr, &replaced, nullptr);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(replaced, 3);
  EXPECT_EQ(CountNodes(g, cudaGraphNodeTypeMemset), 1);  // the 2-D one
  EXPECT_EQ(CountNodes(g, cudaGraphNodeTypeKernel), 3);
  ExpectReplaysWrite(g, buf, expected);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
  EXPECT_EQ(Driver().ModuleUnload(module), CUDA_SUCCESS);
}

// A chain of 1-D fills (element size 1) of `buf`: {offset, width, value}, applied to *expected too.
struct Span {
  size_t offset, width;
  unsigned value;
};
cudaGraph_t FillChain(unsigned char* buf, const std::vector<Span>& spans, std::vector<unsigned char>* expected) {
  cudaGraph_t g = nullptr;
  EXPECT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t prev = nullptr;
  for (const Span& f : spans) {
    cudaMemsetParams p{};
    p.dst = buf + f.offset;
    p.value = f.value;
    p.elementSize = 1;
    p.width = f.width;
    p.height = 1;
    cudaGraphNode_t node = nullptr;
    EXPECT_EQ(cudaGraphAddMemsetNode(&node, g, prev != nullptr ? &prev : nullptr, prev != nullptr ? 1 : 0, &p),
              cudaSuccess);
    prev = node;
    HostFill(expected, f.offset, f.value, 1, f.width);
  }
  return g;
}

size_t Count(cudaGraph_t g, bool roots) {
  size_t n = 0;
  EXPECT_EQ(roots ? cudaGraphGetRootNodes(g, nullptr, &n) : cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n),
            cudaSuccess);
  return n;
}

TEST(GraphRewrite, ClearsAloneInThePrivateWorkspaceBecomeOneHeadFill) {
  KEEL_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(Driver().status.ok()) << Driver().status.message();
  ASSERT_EQ(cudaFree(nullptr), cudaSuccess);
  CUmodule module = nullptr;
  ASSERT_EQ(Driver().ModuleLoadData(&module, vm_internal::kKeelRuntimeCubin), CUDA_SUCCESS);
  CUfunction fill = nullptr;
  ASSERT_EQ(Driver().ModuleGetFunction(&fill, module, "keel_fill"), CUDA_SUCCESS);
  constexpr size_t kBytes = 16384, kPrivate = 4096;
  unsigned char* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, kBytes), cudaSuccess);
  for (const unsigned second : {2u, 7u}) {
    SCOPED_TRACE(second);
    // Outside the private part: two overlapping fills (their order matters). Inside: two alone
    // (lifted when their values agree), two overlapping each other, one reaching past the end.
    const std::vector<Span> chain = {{0, 1024, 1}, {kPrivate, 4, 2},   {0, 512, 3},         {8192, 8, 4},
                                     {8196, 8, 5}, {12288, 4, second}, {kBytes - 4, 4, 6}};
    std::vector<unsigned char> expected(kBytes);
    const bool lifts = second == 2;
    if (lifts) HostFill(&expected, kPrivate, 2, 1, 12292 - kPrivate);  // the head fill's span, first
    cudaGraph_t g = FillChain(buf, chain, &expected);
    int replaced = -1, lifted = -1;
    const Status s = vm_internal::MemsetNodesAsKernels(g, fill, buf + kPrivate, buf + kBytes - 2, &replaced, &lifted);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(replaced, 7);
    EXPECT_EQ(lifted, lifts ? 2 : 0);
    EXPECT_EQ(Count(g, true), 1u);  // the head fill, or the chain's first
    // A chain of 7 has 6 edges. Lifting two takes their 4 and adds 3: each one's predecessor ->
    // its dependent, the head fill -> the first.
    EXPECT_EQ(Count(g, false), lifts ? 5u : 6u);
    ExpectReplaysWrite(g, buf, expected);
  }
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
  EXPECT_EQ(Driver().ModuleUnload(module), CUDA_SUCCESS);
}

TEST(GraphRewrite, WithoutTheFillKernelTheGraphIsUnchanged) {
  KEEL_SKIP_WITHOUT_GPU();
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  void* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, 64), cudaSuccess);
  cudaMemsetParams p{};
  p.dst = buf;
  p.elementSize = 4;
  p.width = 16;
  p.height = 1;
  cudaGraphNode_t node = nullptr;
  ASSERT_EQ(cudaGraphAddMemsetNode(&node, g, nullptr, 0, &p), cudaSuccess);
  int replaced = -1;
  ASSERT_TRUE(vm_internal::MemsetNodesAsKernels(g, nullptr, nullptr, nullptr, &replaced, nullptr).ok());
  EXPECT_EQ(replaced, 0);
  EXPECT_EQ(CountNodes(g, cudaGraphNodeTypeMemset), 1);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaFree(buf), cudaSuccess);
}

}  // namespace
}  // namespace keel::cudatest
