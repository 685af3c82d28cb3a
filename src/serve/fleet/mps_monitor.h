// The MPS daemon's state in /metrics and the log while `steno serve --share mps` runs: a thread asks for the
// status every period and publishes
//   steno_mps_state{state="ready|fault|down|restarting"}  gauge: 1 for the current state, 0 for the others
//   steno_mps_servers                                    gauge: MPS servers running
// logging each change of state (a warning when it leaves `ready`).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "serve/fleet/mps.h"

namespace prometheus {
class Registry;
template <typename T> class Family;
class Gauge;
}  // namespace prometheus

namespace steno::serve::fleet {

class MpsMonitor {
 public:
  // `status` is asked on the monitor's thread (MpsDaemon::status is thread-safe); the first answer is published
  // before the constructor returns.
  MpsMonitor(std::function<MpsStatus()> status, prometheus::Registry& registry,
             std::chrono::milliseconds period = std::chrono::seconds(5));
  ~MpsMonitor();
  MpsMonitor(const MpsMonitor&) = delete;
  MpsMonitor& operator=(const MpsMonitor&) = delete;

 private:
  void publish(const MpsStatus& s);
  void run();

  std::function<MpsStatus()> status_;
  std::chrono::milliseconds period_;
  std::vector<prometheus::Gauge*> state_;  // by MpsState
  prometheus::Gauge* servers_ = nullptr;
  MpsState last_ = MpsState::kReady;
  bool first_ = true;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is set up
};

}  // namespace steno::serve::fleet
