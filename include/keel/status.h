// keel/status.h — error values used by every Keel API.
//
// Errors are values: a function that can fail returns `Status` (no payload) or
// `Result<T>` (a T or an error). Both are [[nodiscard]]. No exception crosses a
// Keel API; the runtime never aborts on bad input. The one checked failure is a
// caller's bug: reading the value of a Result that holds an error aborts with
// the error printed (see Result).
//
// Thread-safety: Status and Result are plain values; distinct objects may be used
// from distinct threads freely.
#pragma once

#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "keel/export.h"

namespace keel {

// Stable numeric codes; the C API (keel/c_api.h) exposes the same numbers.
enum class StatusCode : int32_t {
  kOk = 0,
  kInvalidArgument = 1,   // the caller passed something wrong (shape, dtype, name, index)
  kInvalidExecutable = 2, // the executable or kernel library is malformed or inconsistent
  kUnsupported = 3,       // valid input that Keel does not support (op, version, device)
  kNotFound = 4,          // a named thing (file, input, kernel symbol) does not exist
  kOutOfMemory = 5,       // host or device allocation failed
  kDeviceError = 6,       // a device/library call (CUDA, cuBLAS, cuDNN) failed
  kIoError = 7,           // reading or writing a file failed
  kInternal = 8,          // a Keel bug: an invariant did not hold
  kFailedPrecondition = 9 // the call is valid but not in the object's current state
};

KEEL_API const char* StatusCodeName(StatusCode code);

// A success or an error with a code and a human-readable message that names the
// problem (the file, the op, the register, the CUDA call...).
class [[nodiscard]] KEEL_API Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_EXECUTABLE: register 7 out of range (function main has 5)".
  std::string ToString() const;

  // Returns a copy with `context + ": "` prepended to the message.
  Status WithContext(const std::string& context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Convenience constructors.
inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status InvalidExecutable(std::string m) { return {StatusCode::kInvalidExecutable, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status OutOfMemory(std::string m) { return {StatusCode::kOutOfMemory, std::move(m)}; }
inline Status DeviceError(std::string m) { return {StatusCode::kDeviceError, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }

namespace status_internal {
// Result<T>::value() on an error: prints "keel: Result::value() called on an
// error: <status>" to stderr and aborts. A checked failure of the caller's
// contract (test ok() first), never undefined behavior.
[[noreturn]] KEEL_API void ValueOfError(const Status& status);
}  // namespace status_internal

// A T or an error Status (never an OK status without a value).
// value(), operator* and operator-> require ok(); on an error they end the
// process with the status printed (status_internal::ValueOfError).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : has_value_(true) { new (&storage_) T(std::move(value)); }  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {                          // NOLINT: implicit by design
    if (status_.ok()) status_ = Internal("Result constructed from an OK status without a value");
  }
  Result(const Result& other) : status_(other.status_), has_value_(other.has_value_) {
    if (has_value_) new (&storage_) T(*other.get());
  }
  Result(Result&& other) noexcept : status_(std::move(other.status_)), has_value_(other.has_value_) {
    if (has_value_) new (&storage_) T(std::move(*other.get()));
  }
  Result& operator=(Result other) noexcept {
    Reset();
    status_ = std::move(other.status_);
    has_value_ = other.has_value_;
    if (has_value_) new (&storage_) T(std::move(*other.get()));
    return *this;
  }
  ~Result() { Reset(); }

  bool ok() const { return has_value_; }
  const Status& status() const { return status_; }  // OK when a value is held

  T& value() & { return *checked(); }
  const T& value() const& { return *checked(); }
  T&& value() && { return std::move(*checked()); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return checked(); }
  const T* operator->() const { return checked(); }

 private:
  T* get() { return std::launder(reinterpret_cast<T*>(&storage_)); }
  const T* get() const { return std::launder(reinterpret_cast<const T*>(&storage_)); }
  T* checked() {
    if (!has_value_) [[unlikely]] status_internal::ValueOfError(status_);
    return get();
  }
  const T* checked() const {
    if (!has_value_) [[unlikely]] status_internal::ValueOfError(status_);
    return get();
  }
  void Reset() {
    if (has_value_) get()->~T();
    has_value_ = false;
  }
  Status status_;
  bool has_value_ = false;
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace keel

// Propagation helpers (internal use; they only touch the expression given).
#define KEEL_CONCAT_INNER_(a, b) a##b
#define KEEL_CONCAT_(a, b) KEEL_CONCAT_INNER_(a, b)

#define KEEL_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::keel::Status keel_status_ = (expr);          \
    if (!keel_status_.ok()) return keel_status_;   \
  } while (0)

#define KEEL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#define KEEL_ASSIGN_OR_RETURN(lhs, expr) \
  KEEL_ASSIGN_OR_RETURN_IMPL_(KEEL_CONCAT_(keel_result_, __LINE__), lhs, expr)
