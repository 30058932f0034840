// vm/trace.cc — names of the public enums, FormatTraceEvent and the observers of
// vm/trace.h.
#include "vm/trace.h"

#include <cinttypes>

namespace keel {

const char* DeviceTypeName(DeviceType d) {
  switch (d) {
    case DeviceType::kCpu: return "cpu";
    case DeviceType::kCuda: return "cuda";
  }
  return "?";
}

const char* OpCodeName(OpCode op) {
  switch (op) {
    case OpCode::kAllocStorage: return "alloc_storage";
    case OpCode::kAllocTensor: return "alloc_tensor";
    case OpCode::kLoadConst: return "load_const";
    case OpCode::kCopy: return "copy";
    case OpCode::kInvoke: return "invoke";
    case OpCode::kFreeStorage: return "free_storage";
    case OpCode::kRet: return "ret";
  }
  return "?";
}

const char* DeviceOpKindName(DeviceOpKind k) {
  switch (k) {
    case DeviceOpKind::kNone: return "none";
    case DeviceOpKind::kArenaSlice: return "arena-slice";
    case DeviceOpKind::kAllocate: return "allocate";
    case DeviceOpKind::kFree: return "free";
    case DeviceOpKind::kCopy: return "copy";
    case DeviceOpKind::kLaunch: return "launch";
    case DeviceOpKind::kPrefetch: return "prefetch";
  }
  return "?";
}

const char* CopyDirectionName(CopyDirection d) {
  switch (d) {
    case CopyDirection::kHostToHost: return "host->host";
    case CopyDirection::kHostToDevice: return "host->device";
    case CopyDirection::kDeviceToHost: return "device->host";
    case CopyDirection::kDeviceToDevice: return "device->device";
  }
  return "?";
}

namespace {
void AppendDeviceOp(std::string& line, const DeviceOp& op);
}  // namespace

std::string FormatTraceEvent(const TraceEvent& e) {
  char buf[160];
  // Built with append/snprintf: GCC 12 warns (-Wrestrict, falsely) on chains of operator+.
  std::string line;
  std::snprintf(buf, sizeof buf, "#%u %s", e.instruction_index, OpCodeName(e.opcode));
  line.append(buf);
  if (!e.debug_name.empty()) line.append(" [").append(e.debug_name).append("]");
  AppendDeviceOp(line, e.op);
  std::snprintf(buf, sizeof buf, " %" PRIu64 " ns", e.duration_ns);
  line.append(buf);
  if (e.op.device_ns != 0) {
    std::snprintf(buf, sizeof buf, " (device %" PRIu64 " ns)", e.op.device_ns);
    line.append(buf);
  }
  return line;
}

std::string FormatSetupEvent(std::string_view what, const DeviceOp& op) {
  std::string line = "setup [";
  line.append(what).append("]");
  AppendDeviceOp(line, op);
  if (op.device_ns != 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, " (device %" PRIu64 " ns)", op.device_ns);
    line.append(buf);
  }
  return line;
}

namespace {
void AppendDeviceOp(std::string& line, const DeviceOp& op) {
  char buf[160];
  switch (op.kind) {
    case DeviceOpKind::kNone: break;
    case DeviceOpKind::kArenaSlice:
    case DeviceOpKind::kAllocate:
    case DeviceOpKind::kFree:
      std::snprintf(buf, sizeof buf, " %s %s %" PRIu64 " bytes at %p", DeviceOpKindName(op.kind),
                    std::string(op.call).c_str(), op.bytes, op.address);
      line += buf;
      break;
    case DeviceOpKind::kCopy:
      std::snprintf(buf, sizeof buf, " copy %s %s %" PRIu64 " bytes", std::string(op.call).c_str(),
                    CopyDirectionName(op.direction), op.bytes);
      line += buf;
      break;
    case DeviceOpKind::kLaunch:
      line.append(" launch ").append(op.call).append(" kernel=").append(op.kernel);
      break;
    case DeviceOpKind::kPrefetch:
      std::snprintf(buf, sizeof buf, " prefetch %s kernel=%s %" PRIu64 " bytes at %p", std::string(op.call).c_str(),
                    std::string(op.kernel).c_str(), op.bytes, op.address);
      line += buf;
      break;
  }
}
}  // namespace

void TextTracePrinter::OnInstruction(const TraceEvent& event) {
  std::fprintf(out_, "%s\n", FormatTraceEvent(event).c_str());
}

void TraceRecorder::OnInstruction(const TraceEvent& e) {
  RecordedTraceEvent r;
  r.instruction_index = e.instruction_index;
  r.opcode = e.opcode;
  r.debug_name = std::string(e.debug_name);
  r.op_kind = e.op.kind;
  r.bytes = e.op.bytes;
  r.address = e.op.address;
  r.direction = e.op.direction;
  r.call = std::string(e.op.call);
  r.kernel = std::string(e.op.kernel);
  r.duration_ns = e.duration_ns;
  events_.push_back(std::move(r));
}

}  // namespace keel
