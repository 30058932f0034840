// fuzz/plan_fuzzer.cc — libFuzzer target: keel-plan's planning half. keel-plan
// turns a model into tensor lifetimes and runs every memory-planning strategy on
// them, checking each plan with CheckPlan; here the lifetimes come from the
// fuzzer (the model half is onnx_importer_fuzzer's). Lifetimes are well formed
// as the lowering produces them (first_use <= last_use, power-of-two alignment,
// may_alias_with naming a tensor that dies where this one is born) but sizes,
// counts and overlaps are arbitrary, sizes up to 2^48 bytes. Every strategy must
// return a plan that passes CheckPlan, or an error; never crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "compiler/memory/planner.h"
#include "fuzz/fuzz_input.h"

using keel::memory::TensorLifetime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keel::fuzz::FuzzInput in(data, size);
  const size_t n = static_cast<size_t>(in.Range(0, 40));
  const int32_t steps = static_cast<int32_t>(in.Range(1, 64));
  std::vector<TensorLifetime> tensors(n);
  for (size_t i = 0; i < n; ++i) {
    TensorLifetime& t = tensors[i];
    t.size = in.Bool() ? in.Range(0, 4096) : in.Range(0, uint64_t{1} << 48);
    t.alignment = uint32_t{1} << in.Range(0, 12);
    t.first_use = static_cast<int32_t>(in.Range(0, static_cast<uint64_t>(steps - 1)));
    t.last_use = static_cast<int32_t>(in.Range(static_cast<uint64_t>(t.first_use), static_cast<uint64_t>(steps)));
    t.device = in.Range(0, 5) == 0 ? keel::memory::Device::kCuda : keel::memory::Device::kCpu;
    t.name = "t" + std::to_string(i);
    if (i > 0 && in.Range(0, 3) == 0) {
      const size_t j = static_cast<size_t>(in.Range(0, i - 1));
      if (tensors[j].last_use == t.first_use && tensors[j].device == t.device) t.may_alias_with = static_cast<int32_t>(j);
    }
  }
  keel::memory::PlanOptions options;
  options.time_limit_seconds = 0.02;  // the search strategies stop early; bounded per input
  for (const std::string& name : keel::memory::PlannerNames()) {
    auto planner = keel::memory::CreatePlanner(name);
    if (!planner.ok()) std::abort();
    auto plan = (*planner)->MakePlan(tensors, options);
    if (!plan.ok()) continue;
    keel::Status s = keel::memory::CheckPlan(tensors, *plan);
    if (!s.ok()) {
      std::fprintf(stderr, "plan_fuzzer: strategy %s: %s\n", name.c_str(), s.ToString().c_str());
      std::abort();
    }
  }
  return 0;
}
