// serialization/status.cc — implementation of keel/status.h (Status formatting).
//
// Lives in keel_status, a dependency-free library shared by the runtime (VM,
// serialization reader) and the compiler. The names returned by StatusCodeName
// are stable: tools and the C API print them.
#include "keel/status.h"

#include <cstdio>
#include <cstdlib>

namespace keel {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kInvalidExecutable: return "INVALID_EXECUTABLE";
    case StatusCode::kUnsupported: return "UNSUPPORTED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kOutOfMemory: return "OUT_OF_MEMORY";
    case StatusCode::kDeviceError: return "DEVICE_ERROR";
    case StatusCode::kIoError: return "IO_ERROR";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
  }
  // A value outside the enum (e.g. cast from a C API integer): still printable.
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = StatusCodeName(code_);
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

Status Status::WithContext(const std::string& context) const {
  // An OK status carries no message; adding context to it would turn success
  // into something that prints like an error, so it is returned unchanged.
  if (ok()) return *this;
  return Status(code_, context + ": " + message_);
}

namespace status_internal {

void ValueOfError(const Status& status) {
  // stdio, not iostreams: the runtime links no stream machinery.
  std::fprintf(stderr, "keel: Result::value() called on an error: %s\n", status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace status_internal

}  // namespace keel
