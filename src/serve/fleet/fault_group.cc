#include "serve/fleet/fault_group.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

namespace steno::serve::fleet {

void FaultGroup::join(Member* m) {
  std::lock_guard lock(mu_);
  members_.push_back(m);
}

void FaultGroup::leave(Member* m) {
  std::lock_guard lock(mu_);
  members_.erase(std::remove(members_.begin(), members_.end(), m), members_.end());
}

void FaultGroup::fault(Member* from, int worker) {
  std::lock_guard lock(mu_);
  recovering_ = true;
  for (Member* m : members_) m->take_down(m == from ? worker : -1);
}

void FaultGroup::notify_down() {
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

bool FaultGroup::faulting() {
  std::lock_guard lock(mu_);
  return recovering_;
}

void FaultGroup::await_recovery(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!recovering_) return;
  auto all_down = [&] {
    for (const Member* m : members_)
      if (!m->all_down()) return false;
    return true;
  };
  // Each worker's executor reaps its own once it sees it gone (within a heartbeat interval when idle).
  if (!cv_.wait_for(lock, timeout, [&] { return !recovering_ || all_down(); }))
    spdlog::warn("a worker of the faulted group is still alive after {} s; starting again anyway",
                 timeout.count() / 1000.0);
  if (!recovering_) return;  // another start recovered the group meanwhile
  recovering_ = false;
  if (!recover_) return;
  spdlog::warn("every worker of the faulted group is down: recovering the GPU before starting them again");
  try {
    recover_();
  } catch (const std::exception& e) {
    spdlog::error("could not recover the group's GPU: {}; starting the workers anyway", e.what());
  }
}

}  // namespace steno::serve::fleet
