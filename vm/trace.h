// vm/trace.h — ready-made trace observers (keel::TraceObserver, keel/vm.h).
//
// The VM reports one TraceEvent per executed instruction to an optional
// observer; these are the two observers the tools use:
//   * TextTracePrinter writes FormatTraceEvent lines to a FILE*;
//   * TraceRecorder keeps the events (with copied strings) for tests and reports.
// Neither is thread-safe: attach one observer per VM.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "keel/vm.h"

namespace keel {

class TextTracePrinter final : public TraceObserver {
 public:
  explicit TextTracePrinter(std::FILE* out) : out_(out) {}  // `out` is not owned
  void OnInstruction(const TraceEvent& event) override;

 private:
  std::FILE* out_;
};

// A TraceEvent whose strings are owned (it outlives the Executable).
struct RecordedTraceEvent {
  uint32_t instruction_index = 0;
  OpCode opcode = OpCode::kRet;
  std::string debug_name;
  DeviceOpKind op_kind = DeviceOpKind::kNone;
  uint64_t bytes = 0;
  const void* address = nullptr;
  CopyDirection direction = CopyDirection::kHostToHost;
  std::string call;
  std::string kernel;
  uint64_t duration_ns = 0;
};

class TraceRecorder final : public TraceObserver {
 public:
  void OnInstruction(const TraceEvent& event) override;
  const std::vector<RecordedTraceEvent>& events() const { return events_; }
  void Clear() { events_.clear(); }

 private:
  std::vector<RecordedTraceEvent> events_;
};

}  // namespace keel
