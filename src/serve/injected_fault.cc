#include "serve/request.h"

namespace steno::serve {

std::optional<InjectedFault> parse_injected_fault(std::string_view name) {
  if (name == "crash") return InjectedFault::kCrash;
  if (name == "hang") return InjectedFault::kHang;
  if (name == "device-fault") return InjectedFault::kDeviceFault;
  if (name == "oom") return InjectedFault::kOom;
  return std::nullopt;
}

const char* injected_fault_name(InjectedFault fault) {
  switch (fault) {
    case InjectedFault::kNone: return "none";
    case InjectedFault::kCrash: return "crash";
    case InjectedFault::kHang: return "hang";
    case InjectedFault::kDeviceFault: return "device-fault";
    case InjectedFault::kOom: return "oom";
  }
  return "unknown";
}

}  // namespace steno::serve
