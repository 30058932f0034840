// vm/cuda/library_calls_tuning.h — the tuning file's text (vm/cuda/autotune.h
// has the format): the cuDNN algorithm names it uses, its line parser and its
// writer; shared verbatim by the VM (vm/cuda/autotune.cc wraps them in Status)
// and keelc --emit=cuda-host programs (which read the VM's file), so the two
// accept and refuse the same lines. No cuDNN types: the VM's parser builds
// without cuDNN, so the algorithms are named by their enum values, which the
// cuDNN ABI fixes (library_calls_cudnn.h names its enums through these tables).
//
// Errors: ParseTuningText returns false and sets "tuning file <path> line <n>:
// <what>" for the first malformed line. Thread-safety: pure functions.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_TUNING_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_TUNING_H_

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vm/cuda/library_calls_engine_choice.h"

namespace keel::cuda_lib {

// cudnnConvolutionFwdAlgo_t and cudnnConvolutionBwdDataAlgo_t by value.
[[maybe_unused]] constexpr const char* kConvAlgoNames[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM",
                                                           "DIRECT",        "FFT",                   "FFT_TILING",
                                                           "WINOGRAD",      "WINOGRAD_NONFUSED"};
[[maybe_unused]] constexpr const char* kConvDataAlgoNames[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                                               "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
// The words of cublasLtMatmulAlgo_t (checked against its size in cublas_kernels.cc).
[[maybe_unused]] constexpr size_t kTuningGemmAlgoWords = 8;

// The name of algorithm `a` of a forward ("conv") or data-gradient
// ("conv_transpose") convolution; "?" out of range.
inline const char* TuningAlgoName(bool transposed, int64_t a) {
  const int64_t n = transposed ? 6 : 8;
  if (a < 0 || a >= n) return "?";
  return transposed ? kConvDataAlgoNames[a] : kConvAlgoNames[a];
}

// Choices by full key "<device> <problem>": conv {algo, mode (0 fused, 1
// conv+epilogue), workspace} and the engine verdict when recorded
// (library_calls_engine_choice.h); gemm {workspace, the algorithm's words}.
using TuningEntries = std::map<std::string, std::vector<int64_t>>;

namespace tuning_text {

inline bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) return false;
  }
  *out = v;
  return true;
}

inline bool ParseHexWords(std::string_view s, std::vector<int64_t>* out) {
  if (s.size() != 16 * kTuningGemmAlgoWords) return false;
  for (size_t w = 0; w < kTuningGemmAlgoWords; ++w) {
    uint64_t v = 0;
    for (size_t i = 0; i < 16; ++i) {
      const char c = s[16 * w + i];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = (v << 4) | static_cast<uint64_t>(d);
    }
    out->push_back(static_cast<int64_t>(v));
  }
  return true;
}

inline std::vector<std::string_view> SplitSpaces(std::string_view line) {
  std::vector<std::string_view> t;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) t.push_back(line.substr(i, j - i));
    i = j;
  }
  return t;
}

}  // namespace tuning_text

// The problem kind of a problem key: "conv", "conv_transpose", "gemm" or
// "attention" (else empty).
inline std::string_view TuningKind(std::string_view problem) {
  const size_t bar = problem.find('|');
  const std::string_view k = problem.substr(0, bar);
  return bar != std::string_view::npos && (k == "conv" || k == "conv_transpose" || k == "gemm" || k == "attention")
             ? k
             : std::string_view();
}

// Parses a tuning file's text into *entries (token count, problem kind, known
// and required fields, numbers, algorithm names, modes, engine verdicts,
// duplicate entries are checked).
inline bool ParseTuningText(std::string_view text, const std::string& path, TuningEntries* entries, std::string* error) {
  size_t line_no = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto bad = [&](const std::string& what) {
      *error = "tuning file " + path + " line " + std::to_string(line_no) + ": " + what;
      return false;
    };
    const std::vector<std::string_view> tok = tuning_text::SplitSpaces(line);
    if (tok.empty() || tok[0][0] == '#') continue;
    if (tok.size() < 3) return bad("expected \"<device> <problem> <choice...>\"");
    const std::string_view kind = TuningKind(tok[1]);
    if (kind.empty()) {
      return bad("unknown problem \"" + std::string(tok[1].substr(0, 40)) +
                 "\" (conv|..., conv_transpose|..., gemm|... or attention|...)");
    }
    const bool attention = kind == "attention";
    const bool conv = kind != "gemm" && !attention;
    std::map<std::string_view, std::string_view> fields;
    for (size_t i = 2; i < tok.size(); ++i) {
      const size_t eq = tok[i].find('=');
      if (eq == std::string_view::npos || eq == 0) return bad("expected name=value, got \"" + std::string(tok[i]) + "\"");
      if (!fields.emplace(tok[i].substr(0, eq), tok[i].substr(eq + 1)).second) {
        return bad("field " + std::string(tok[i].substr(0, eq)) + " appears twice");
      }
    }
    auto field = [&](const char* name) -> std::string_view {
      auto it = fields.find(name);
      return it == fields.end() ? std::string_view() : it->second;
    };
    const std::vector<const char*> required = conv        ? std::vector<const char*>{"algo", "mode", "workspace"}
                                              : attention ? std::vector<const char*>{"workspace", "engine"}
                                                          : std::vector<const char*>{"workspace", "algo"};
    // A forward convolution's engine verdict (library_calls_engine_choice.h), when
    // recorded; an attention's always is (its engine's knobs).
    const std::vector<const char*> optional = kind == "conv"  ? std::vector<const char*>{"engine", "knobs"}
                                              : attention     ? std::vector<const char*>{"knobs"}
                                                              : std::vector<const char*>{};
    for (const auto& [name, value] : fields) {
      bool ok = false;
      for (const char* a : required) ok = ok || name == a;
      for (const char* a : optional) ok = ok || name == a;
      if (!ok) return bad("unknown field \"" + std::string(name) + "\" for a " + std::string(kind) + " problem");
    }
    for (const char* a : required) {
      if (field(a).empty()) return bad(std::string("missing field ") + a + "=");
    }
    uint64_t ws = 0;
    if (!tuning_text::ParseU64(field("workspace"), &ws) || ws > (uint64_t{1} << 62)) {
      return bad("workspace must be a byte count, got \"" + std::string(field("workspace")) + "\"");
    }
    std::vector<int64_t> value;
    if (attention) {
      value.push_back(static_cast<int64_t>(ws));
      std::vector<int64_t> tail;
      std::string why;
      if (!ParseEngineTuning(std::string(field("engine")), fields.count("knobs") != 0, std::string(field("knobs")),
                             &tail, &why, kAttentionNoEngine)) {
        return bad(why);
      }
      value.insert(value.end(), tail.begin(), tail.end());
    } else if (conv) {
      const bool transposed = kind == "conv_transpose";
      int64_t algo = -1;
      for (int64_t a = 0; a < (transposed ? 6 : 8); ++a) {
        if (field("algo") == TuningAlgoName(transposed, a)) algo = a;
      }
      if (algo < 0) return bad("unknown cuDNN algorithm \"" + std::string(field("algo")) + "\"");
      const std::string_view mode = field("mode");
      if ((mode != "fused" || transposed) && mode != "conv+epilogue") {
        return bad(std::string("mode must be ") + (transposed ? "" : "fused or ") + "conv+epilogue, got \"" +
                   std::string(mode) + "\"");
      }
      value = {algo, mode == "fused" ? 0 : 1, static_cast<int64_t>(ws)};
      if (fields.count("engine") != 0 || fields.count("knobs") != 0) {
        std::vector<int64_t> tail;
        std::string why;
        if (!ParseEngineTuning(std::string(field("engine")), fields.count("knobs") != 0, std::string(field("knobs")),
                               &tail, &why)) {
          return bad(why);
        }
        value.insert(value.end(), tail.begin(), tail.end());
      }
    } else {
      value.push_back(static_cast<int64_t>(ws));
      if (!tuning_text::ParseHexWords(field("algo"), &value)) {
        return bad("algo must be " + std::to_string(16 * kTuningGemmAlgoWords) + " lowercase hex digits");
      }
    }
    std::string key = std::string(tok[0]) + " " + std::string(tok[1]);
    if (!entries->emplace(std::move(key), std::move(value)).second) return bad("a second entry for the same problem");
  }
  return true;
}

// The file's text for `entries` (a header comment, then one sorted line per
// entry); entries whose value does not fit their kind are left out.
inline std::string FormatTuningText(const TuningEntries& entries) {
  std::string out =
      "# keel CUDA tuning file (vm/cuda/autotune.h): <device> <problem> <choice>, one problem per line.\n";
  for (const auto& [key, v] : entries) {
    const size_t space = key.find(' ');
    if (space == std::string::npos) continue;
    const std::string_view kind = TuningKind(std::string_view(key).substr(space + 1));
    const bool transposed = kind == "conv_transpose";
    std::string engine;  // the engine verdict's fields (forward convolutions)
    if ((kind == "conv" || transposed) && v.size() >= kConvTuningLegacyValues &&
        TuningAlgoName(transposed, v[0])[0] != '?' && (v[1] == 1 || (v[1] == 0 && !transposed)) && v[2] >= 0 &&
        EngineTuningText(v, &engine) && (engine.empty() || !transposed)) {
      out += key + " algo=" + TuningAlgoName(transposed, v[0]) + " mode=" + (v[1] == 0 ? "fused" : "conv+epilogue") +
             " workspace=" + std::to_string(v[2]) + engine + "\n";
    } else if (kind == "attention" && !v.empty() && v[0] >= 0 &&
               EngineTuningText(v, &engine, kAttentionTuningLeadValues, kAttentionNoEngine) && !engine.empty()) {
      out += key + " workspace=" + std::to_string(v[0]) + engine + "\n";
    } else if (kind == "gemm" && v.size() == 1 + kTuningGemmAlgoWords && v[0] >= 0) {
      out += key + " workspace=" + std::to_string(v[0]) + " algo=";
      for (size_t i = 1; i < v.size(); ++i) {
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016" PRIx64, static_cast<uint64_t>(v[i]));
        out += buf;
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_TUNING_H_
