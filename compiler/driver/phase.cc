// compiler/driver/phase.cc — see phase.h.
#include "compiler/driver/phase.h"

namespace keel::driver {
namespace {
thread_local const char* g_phase = "start";
}  // namespace

const char* CurrentPhase() { return g_phase; }
void SetPhase(const char* phase) { g_phase = phase; }

}  // namespace keel::driver
