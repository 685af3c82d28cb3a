// Test-only fault injection: `steno serve --enable-fault-injection` honours the request header
// `X-Steno-Fault: crash|hang|device-fault|oom`, and the worker process that runs a batch holding such a request
// misbehaves on purpose, so that supervision, replay, poison detection and split-and-retry are tested for real:
//   crash        abort() in the middle of the batch (the worker dies by SIGABRT)
//   hang         the batch never finishes (heartbeats go on: the batch deadline catches it)
//   device-fault inject_device_fault() on the worker's device
//   oom          the batch fails with kResourceExhausted when it holds more than one request (alone it runs)
// Off by default; without the option the header is ignored. Lanes cannot survive a crash, so `steno serve`
// refuses the option outside the worker-process modes.
#pragma once

#include <optional>
#include <string_view>

#include "steno/ops/context.h"
#include "steno/serve/service.h"

namespace steno::serve::fleet {

inline constexpr std::string_view kFaultHeader = "X-Steno-Fault";

// "crash", "hang", "device-fault", "oom" (case-sensitive); nullopt for anything else.
std::optional<InjectedFault> parse_injected_fault(std::string_view name);
const char* injected_fault_name(InjectedFault fault);

// Makes `ctx`'s device fault the way a broken kernel would (device_fault.cc): on CUDA a trapping kernel, after
// which the worker exits with kDeviceFaultExitCode; on the CPU the process raises SIGBUS. Does not return.
void inject_device_fault(ops::Context& ctx);
// The exit status of a worker whose CUDA context took a device fault.
inline constexpr int kDeviceFaultExitCode = 70;

}  // namespace steno::serve::fleet
