// vm/cuda/library_calls_engine_choice.h — which cuDNN backend-API engine
// configuration a convolution runs, and how its tuning-file entry records it;
// shared verbatim by the VM (vm/cuda/autotune.cc, cudnn_kernels.cc) and keelc
// --emit=cuda-host programs (see library_calls.h for why and how). No cuDNN
// types: the tuning file's parser and writer (autotune.cc) build without cuDNN.
//
// Why an identity and not a position in the candidate list: the list depends on
// what its builder asked for (heuristics modes, every engine, runtime-compiled
// ones, the workspace bound) and on which configurations finalize, so "the third
// candidate" would not name one kernel from one process to the next. An engine
// configuration is named exactly by its engine's global index on the operation
// graph plus its knob choices (cudnnBackendKnobType_t, value): configuring that
// engine with those knobs on the same graph gives the same kernel. The numbering
// is one cuDNN release's, which the tuning entry's device tag names
// ("sm90-cudnn91900"), so entries never cross releases.
//
// A convolution's tuning entry (vm/cuda/autotune.h) holds its legacy choice
// {algo, mode, workspace}; the verdict of its engine competition
// (VmOptions::cudnn_engines, library_calls_cudnn_engine.h) follows it:
//   {algo, mode, workspace}                       no competition recorded (engines
//                                                 off, or an older file)
//   {algo, mode, workspace, -1}                   the legacy algorithm won
//   {algo, mode, workspace, index, n, type1, value1, ..., typen, valuen}
//                                                 engine `index` with n knob choices
// and in the file's text, after "workspace=<bytes>":
//   engine=legacy | engine=<index> knobs=<type>:<value>,...  ("knobs=none": no knobs)
//
// Errors: the parsers return false (and say why); nothing else fails.
// Thread-safety: pure functions.
#ifndef KEEL_VM_CUDA_LIBRARY_CALLS_ENGINE_CHOICE_H_
#define KEEL_VM_CUDA_LIBRARY_CALLS_ENGINE_CHOICE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace keel::cuda_lib {

// One engine configuration: global index (-1: none, the legacy path) and knob
// choices sorted by knob type (one choice per type).
struct EngineId {
  int64_t index = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;  // (cudnnBackendKnobType_t, value)
  bool operator==(const EngineId& o) const { return index == o.index && knobs == o.knobs; }
};

// Values of a convolution's legacy choice at the front of its tuning entry.
constexpr size_t kConvTuningLegacyValues = 3;
// Knob choices an identity may carry (cuDNN 9 has 44 knob types).
constexpr int64_t kMaxEngineKnobs = 64;

// Values ahead of the engine verdict in an attention's tuning entry: its workspace
// (library_calls_cudnn_attention.h); its verdict's "no engine" is Keel's own kernel.
constexpr size_t kAttentionTuningLeadValues = 1;
constexpr const char* kAttentionNoEngine = "keel";

// "engine=12 knobs=3:1,5:0" ("knobs=none" without knobs; "engine=<none>" for -1,
// "legacy" for a convolution's legacy call): the identity as the tuning file,
// the trace and errors spell it.
inline std::string EngineIdText(const EngineId& id, const char* none = "legacy") {
  if (id.index < 0) return std::string("engine=") + none;
  std::string s = "engine=" + std::to_string(id.index) + " knobs=";
  if (id.knobs.empty()) return s + "none";
  for (size_t i = 0; i < id.knobs.size(); ++i) {
    s += (i ? "," : "") + std::to_string(id.knobs[i].first) + ":" + std::to_string(id.knobs[i].second);
  }
  return s;
}

// The engine verdict of a tuning entry whose first `lead` values are its own
// (a convolution's legacy choice; an attention's workspace): *recorded false
// for an entry of those alone; else *id (index -1: no engine, the legacy
// algorithm or Keel's kernel won). False for a malformed tail.
inline bool EngineFromTuning(const std::vector<int64_t>& entry, bool* recorded, EngineId* id,
                             size_t lead = kConvTuningLegacyValues) {
  *recorded = false;
  *id = EngineId{};
  if (entry.size() < lead) return false;
  if (entry.size() == lead) return true;
  const int64_t index = entry[lead];
  if (index < 0) {
    *recorded = entry.size() == lead + 1 && index == -1;
    return *recorded;
  }
  if (entry.size() < lead + 2) return false;
  const int64_t n = entry[lead + 1];
  if (n < 0 || n > kMaxEngineKnobs || entry.size() != lead + 2 + 2 * static_cast<size_t>(n)) {
    return false;
  }
  id->index = index;
  for (int64_t k = 0; k < n; ++k) {
    const size_t at = lead + 2 + 2 * static_cast<size_t>(k);
    if (entry[at] < 0 || (k > 0 && entry[at] <= entry[at - 2])) return false;  // sorted, one per type
    id->knobs.emplace_back(entry[at], entry[at + 1]);
  }
  *recorded = true;
  return true;
}

// Replaces the engine verdict of `entry` (its first `lead` values kept) with `id`.
inline void SetEngineTuning(const EngineId& id, std::vector<int64_t>* entry, size_t lead = kConvTuningLegacyValues) {
  entry->resize(lead);
  entry->push_back(id.index < 0 ? -1 : id.index);
  if (id.index < 0) return;
  entry->push_back(static_cast<int64_t>(id.knobs.size()));
  for (const auto& [type, value] : id.knobs) {
    entry->push_back(type);
    entry->push_back(value);
  }
}

// The fields after "workspace=<bytes>" of an entry's text: "" (no verdict), or
// " " + EngineIdText. False for a malformed tail.
inline bool EngineTuningText(const std::vector<int64_t>& entry, std::string* text,
                             size_t lead = kConvTuningLegacyValues, const char* none = "legacy") {
  bool recorded = false;
  EngineId id;
  if (!EngineFromTuning(entry, &recorded, &id, lead)) return false;
  *text = recorded ? " " + EngineIdText(id, none) : std::string();
  return true;
}

namespace engine_choice_detail {
// A decimal int64 (optionally negative when `negative_ok`); false for anything else.
inline bool ParseInt(const std::string& s, bool negative_ok, int64_t* out) {
  size_t i = 0;
  const bool neg = negative_ok && !s.empty() && s[0] == '-';
  if (neg) i = 1;
  if (i >= s.size() || s.size() - i > 18) return false;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = neg ? -v : v;
  return true;
}
}  // namespace engine_choice_detail

// The tail of a tuning entry from the text of its "engine=" and "knobs="
// fields (`has_knobs`: the line has a knobs field). False, with *why, for a
// malformed pair: engine neither `none` ("legacy", or "keel" for an attention)
// nor an index, knobs missing after an index or present after `none`, a knob
// not "<type>:<value>", types unsorted or repeated.
inline bool ParseEngineTuning(const std::string& engine, bool has_knobs, const std::string& knobs,
                              std::vector<int64_t>* tail, std::string* why, const char* none = "legacy") {
  namespace d = engine_choice_detail;
  EngineId id;
  if (engine.empty()) {
    *why = "missing field engine= (knobs= belongs to an engine)";
    return false;
  }
  if (engine == none) {
    if (has_knobs) {
      *why = std::string("knobs= with engine=") + none;
      return false;
    }
  } else {
    if (!d::ParseInt(engine, false, &id.index)) {
      *why = std::string("engine must be ") + none + " or an engine's global index, got \"" + engine + "\"";
      return false;
    }
    if (!has_knobs) {
      *why = "missing field knobs= after engine=" + engine;
      return false;
    }
    if (knobs != "none") {
      size_t pos = 0;
      while (pos <= knobs.size()) {
        size_t end = knobs.find(',', pos);
        if (end == std::string::npos) end = knobs.size();
        const std::string item = knobs.substr(pos, end - pos);
        const size_t colon = item.find(':');
        int64_t type = 0, value = 0;
        if (colon == std::string::npos || !d::ParseInt(item.substr(0, colon), false, &type) ||
            !d::ParseInt(item.substr(colon + 1), true, &value)) {
          *why = "knobs must be none or <type>:<value>,..., got \"" + knobs + "\"";
          return false;
        }
        if (!id.knobs.empty() && type <= id.knobs.back().first) {
          *why = "knob types must be increasing, got \"" + knobs + "\"";
          return false;
        }
        if (static_cast<int64_t>(id.knobs.size()) == kMaxEngineKnobs) {
          *why = "more than " + std::to_string(kMaxEngineKnobs) + " knobs";
          return false;
        }
        id.knobs.emplace_back(type, value);
        pos = end + 1;
      }
    }
  }
  std::vector<int64_t> entry(kConvTuningLegacyValues, 0);
  SetEngineTuning(id, &entry);
  tail->assign(entry.begin() + kConvTuningLegacyValues, entry.end());
  return true;
}

}  // namespace keel::cuda_lib

#endif  // KEEL_VM_CUDA_LIBRARY_CALLS_ENGINE_CHOICE_H_
