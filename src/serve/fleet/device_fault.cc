// inject_device_fault (fault_injection.h), tests only. A CUDA context runs a kernel that traps: its sticky error
// leaves the process's CUDA context unusable, so the worker exits, as a worker must after any sticky CUDA error,
// and supervision replays its batch (under MPS the other clients of the GPU fault too, and the group restarts).
// Every other context gets a bus error of the worker process: to supervision the same thing.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "steno/core/error.h"
#include "steno/ops/fault.h"
#include "serve/fleet/fault_injection.h"

namespace steno::serve::fleet {

void inject_device_fault(ops::Context& ctx) {
  if (!ctx.device().is_cpu()) {
    spdlog::error("injected device fault on {}: launching a trapping kernel", ctx.device().str());
    try {
      ops::trap_device(ctx);
      ctx.synchronize();
    } catch (const Error& e) {
      spdlog::error("device fault: {}; the CUDA context is unusable, worker exiting", e.what());
    }
    std::_Exit(kDeviceFaultExitCode);
  }
  spdlog::error("injected device fault on {}: raising SIGBUS", ctx.device().str());
  ::raise(SIGBUS);
}

}  // namespace steno::serve::fleet
