// apps/keel-run/verify.h — `keel-run --verify`: check an executable + kernel
// library pair offline, without loading (executing) the library.
#pragma once

#include <string>

namespace keel::run {

// Verifies the executable's format (the VM's own checks), then compares the
// library file's size and SHA-256 with those the executable records. Prints a
// report on stdout; returns the exit code (0: the pair matches, 1: it does not or
// something is unreadable, with one error line on stderr).
int VerifyPair(const std::string& model, const std::string& library);

}  // namespace keel::run
