// compiler/driver/phase.h — which phase of a compilation the current thread is in.
//
// Errors are values in Keel; an exception reaching a tool's main() is a bug. The
// tools' last-resort handler (apps/common/cli.h, RunGuarded) names the phase it
// escaped from, so the report says where to look. A plain setter, not a scope
// guard: unwinding must not reset the phase before the handler reads it.
// Thread-local: concurrent compilations each keep their own.
#pragma once

namespace keel::driver {

// The current phase ("import", "passes", "lowering", ...); "start" before any.
const char* CurrentPhase();
// `phase` must be a string literal (or otherwise outlive the thread).
void SetPhase(const char* phase);

}  // namespace keel::driver
