// The worker fleet's Prometheus series, beside the core's (statistics.h: replays, poisoned requests, batch splits
// and caps are counted there, for every kind of executor), labelled by model, version and device (the fleet's
// device group: "cuda:1"; device_groups.h):
//   steno_worker_restarts_total{reason}    counter: workers restarted, by why the old one ended: exit (it exited),
//                                          signal (killed by a signal), hang (no heartbeat, or a batch past its
//                                          deadline: SIGKILLed), protocol (it broke the wire protocol: SIGKILLed),
//                                          group (killed because another worker of its group faulted)
//   steno_workers_up                       gauge: workers started and ready
//   steno_worker_memory_bytes{worker,memory}  gauge: each worker's last reported memory (memory="host": its
//                                          resident set; "device": what NVML attributes to it, on CUDA)
//   steno_shared_weight_bytes              gauge: the device weights the workers share as one copy
//                                          (--share-weights; 0 when they are not shared)
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
template <typename T>
class Family;
}  // namespace prometheus

namespace steno::serve::fleet {

enum class RestartReason { kExit, kSignal, kHang, kProtocol, kGroup };
const char* restart_reason_name(RestartReason r);

// Thread-safe (prometheus-cpp's metrics are); lives as long as the registry it registers in.
class FleetMetrics {
 public:
  FleetMetrics(prometheus::Registry& registry, const std::string& model, const std::string& version, int workers,
               const std::string& device = "");

  void worker_restarted(RestartReason reason);
  void worker_up();
  void worker_down();
  // kMemoryNotReported (wire.h) leaves that series unset.
  void set_worker_memory(int worker, uint64_t host_bytes, uint64_t device_bytes);
  void set_shared_weight_bytes(uint64_t bytes);

 private:
  std::vector<prometheus::Counter*> restarts_;  // by RestartReason
  prometheus::Gauge* up_;
  prometheus::Gauge* shared_weights_;
  prometheus::Family<prometheus::Gauge>* memory_;
  std::string model_, version_, device_;
  std::mutex memory_mu_;
  std::vector<prometheus::Gauge*> host_memory_;    // by worker
  std::vector<prometheus::Gauge*> device_memory_;  // by worker; added once the worker reports device memory
};

}  // namespace steno::serve::fleet
