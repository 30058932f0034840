// apps/common/cli.h — the command-line scanning the compiler tools (keelc,
// keel-plan) share: options take their value as the next argument
// ("--flag VALUE") or after an equals sign ("--flag=VALUE"), and usage errors
// are one line on stderr with exit status 2.
//
// Header-only (the tools are single .cc files; no library to link).
// Thread-safety: ArgScanner is used by one thread; the free functions are reentrant.
// Ownership: ArgScanner borrows argv, which outlives main's loop.
#pragma once

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

namespace keel::cli {

// Walks argv[1..argc-1]:
//   for (ArgScanner args(argc, argv); args.Next();) {
//     std::string v;
//     if (args.Value("-o", v)) ...
//   }
class ArgScanner {
 public:
  ArgScanner(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Moves to the next argument; false when none is left.
  bool Next() {
    if (++index_ >= argc_) return false;
    arg_ = argv_[index_];
    missing_value_ = false;
    return true;
  }
  const std::string& arg() const { return arg_; }

  // True when the current argument is `flag` with a value, stored in `out`:
  // "FLAG VALUE" (the value argument is consumed) or "FLAG=VALUE". A bare FLAG
  // as the last argument gives false and sets missing_value().
  bool Value(const std::string& flag, std::string& out) {
    if (arg_ == flag) {
      if (index_ + 1 >= argc_) {
        missing_value_ = true;
        return false;
      }
      out = argv_[++index_];
      return true;
    }
    if (arg_.rfind(flag + "=", 0) == 0) {
      out = arg_.substr(flag.size() + 1);
      return true;
    }
    return false;
  }
  // Whether a Value call on the current argument found its flag without a value.
  bool missing_value() const { return missing_value_; }

 private:
  int argc_;
  char** argv_;
  int index_ = 0;
  std::string arg_;
  bool missing_value_ = false;
};

// "a, b, c" for Join({"a", "b", "c"}, ", "): lists in usage texts.
inline std::string Join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

// "TOOL: MESSAGE (see TOOL --help)" on stderr; returns 2, the usage exit status.
inline int UsageError(const char* tool, const std::string& message) {
  std::fprintf(stderr, "%s: %s (see %s --help)\n", tool, message.c_str(), tool);
  return 2;
}

// The last resort: returns body()'s exit status. Errors in Keel are values, so an
// exception escaping body() is a bug; it becomes one INTERNAL line naming the
// phase (`phase()`, e.g. keel::driver::CurrentPhase) and exit status 1, never an
// abort. tests/hostile checks that no reproducer of issue 13 gets here.
template <typename Body>
int RunGuarded(const char* tool, const char* (*phase)(), Body&& body) {
  const char* what = "unknown exception";
  std::string text;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    what = "std::bad_alloc (an allocation from an unchecked size?)";
  } catch (const std::exception& e) {
    text = e.what();
    what = text.c_str();
  } catch (...) {
  }
  std::fprintf(stderr, "%s: error: INTERNAL: uncaught exception in phase '%s': %s (a Keel bug: please report it)\n",
               tool, phase(), what);
  return 1;
}

}  // namespace keel::cli
