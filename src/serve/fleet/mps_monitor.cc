#include "serve/fleet/mps_monitor.h"

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace steno::serve::fleet {

namespace {
constexpr MpsState kStates[] = {MpsState::kReady, MpsState::kFault, MpsState::kDown, MpsState::kRestarting};

// A status that cannot be had is a daemon that is down.
MpsStatus ask(const std::function<MpsStatus()>& status) {
  try {
    return status();
  } catch (const std::exception& e) {
    MpsStatus s;
    s.state = MpsState::kDown;
    s.text = e.what();
    return s;
  }
}
}  // namespace

MpsMonitor::MpsMonitor(std::function<MpsStatus()> status, prometheus::Registry& registry,
                       std::chrono::milliseconds period)
    : status_(std::move(status)), period_(period) {
  auto& state = prometheus::BuildGauge()
                    .Name("steno_mps_state")
                    .Help("The MPS daemon's state: 1 for the current one (ready, fault, down, restarting)")
                    .Register(registry);
  for (MpsState s : kStates) state_.push_back(&state.Add({{"state", mps_state_name(s)}}));
  servers_ = &prometheus::BuildGauge()
                  .Name("steno_mps_servers")
                  .Help("MPS servers running (one per user with clients)")
                  .Register(registry)
                  .Add({});
  publish(ask(status_));
  thread_ = std::thread([this] { run(); });
}

MpsMonitor::~MpsMonitor() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MpsMonitor::publish(const MpsStatus& s) {
  for (size_t i = 0; i < state_.size(); ++i) state_[i]->Set(kStates[i] == s.state ? 1.0 : 0.0);
  servers_->Set(s.servers);
  if (first_ || s.state != last_) {
    if (s.state == MpsState::kReady)
      spdlog::info("MPS {}: {}", mps_state_name(s.state), s.text);
    else
      spdlog::warn("MPS {}: {}", mps_state_name(s.state), s.text);
  }
  first_ = false;
  last_ = s.state;
}

void MpsMonitor::run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, period_, [this] { return stop_; })) {
    lock.unlock();
    const MpsStatus s = ask(status_);
    lock.lock();
    if (!stop_) publish(s);
  }
}

}  // namespace steno::serve::fleet
