// The worker's side of test-only fault injection (InjectedFault, request.h): a device fault raised on purpose, the
// way a broken kernel would, so that supervision under MPS is tested for real.
#pragma once

#include "steno/ops/context.h"

namespace steno::serve::fleet {

// Makes `ctx`'s device fault the way a broken kernel would (device_fault.cc): on CUDA a trapping kernel, after
// which the worker exits with kDeviceFaultExitCode; on the CPU the process raises SIGBUS. Does not return.
void inject_device_fault(ops::Context& ctx);
// The exit status of a worker whose CUDA context took a device fault.
inline constexpr int kDeviceFaultExitCode = 70;

}  // namespace steno::serve::fleet
