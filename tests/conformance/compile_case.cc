// tests/conformance/compile_case.cc — see the header.
#include "tests/conformance/compile_case.h"

#include <chrono>
#include <regex>

#include "compiler/driver/compile.h"

namespace keel::conformance {

using Clock = std::chrono::steady_clock;

// See the header.
bool CompileCase(const Case& c, const RunOptions& o, const std::string& model_path, const std::string& out_path,
                 CaseResult& r) {
  driver::CompileOptions co;
  co.model_path = model_path;
  co.output_path = out_path;
  co.target = o.target;
  static const std::regex kNeedsConstant(R"(input \d+ \('([^']*)'\) must be a compile-time constant)");
  const auto start = Clock::now();
  for (size_t attempt = 0;; ++attempt) {
    auto summary = driver::CompileModel(co);
    if (summary.ok()) break;
    const Status& s = summary.status();
    std::smatch m;
    const std::string msg = s.message();
    if (std::regex_search(msg, m, kNeedsConstant) && attempt < c.inputs.size()) {
      const std::string named = m[1].str();
      const TensorSpec* in = nullptr;
      for (const TensorSpec& t : c.inputs) in = t.name == named ? &t : in;
      // A value computed from graph inputs (a Cast of a size, say): freeze the
      // first integer input not frozen yet, then any, one per attempt.
      for (int pass = 0; !in && pass < 2; ++pass) {
        for (const TensorSpec& t : c.inputs) {
          if (!in && !co.import.frozen_inputs.count(t.name) && (pass == 1 || !IsFloatType(t.dtype))) in = &t;
        }
      }
      const std::string name = in ? in->name : named;
      if (in && !co.import.frozen_inputs.count(name)) {
        auto bytes = ReadWholeFile(o.cases_dir + "/" + c.name + "/" + in->file);
        if (bytes.ok()) {
          co.import.frozen_inputs[name] = std::move(*bytes);
          r.frozen.push_back(name);
          continue;
        }
      }
    }
    r.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // Internal errors and failed tools are bugs, not refusals.
    const bool refusal = s.code() == StatusCode::kUnsupported || s.code() == StatusCode::kInvalidArgument;
    r.status = refusal ? "refused" : "error";
    r.reason = (refusal ? "" : std::string("compile: ") + StatusCodeName(s.code()) + ": ") + OneLine(msg, model_path);
    return false;
  }
  r.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return true;
}

}  // namespace keel::conformance
