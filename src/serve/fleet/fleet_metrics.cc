#include "serve/fleet/fleet_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "serve/fleet/wire.h"

namespace steno::serve::fleet {
namespace {

constexpr RestartReason kReasons[] = {RestartReason::kExit, RestartReason::kSignal, RestartReason::kHang,
                                      RestartReason::kProtocol, RestartReason::kGroup};

}  // namespace

const char* restart_reason_name(RestartReason r) {
  switch (r) {
    case RestartReason::kExit: return "exit";
    case RestartReason::kSignal: return "signal";
    case RestartReason::kHang: return "hang";
    case RestartReason::kProtocol: return "protocol";
    case RestartReason::kGroup: return "group";
  }
  return "unknown";
}

FleetMetrics::FleetMetrics(prometheus::Registry& registry, const std::string& model, const std::string& version,
                           int workers, const std::string& device)
    : model_(model), version_(version), device_(device) {
  const prometheus::Labels labels = {{"model", model}, {"version", version}, {"device", device}};
  const auto with = [&](const std::string& key, const std::string& value) {
    prometheus::Labels l = labels;
    l[key] = value;
    return l;
  };
  // Families of the same name merge in the registry: every model served by worker processes shares them.
  auto& restarts = prometheus::BuildCounter()
                       .Name("steno_worker_restarts_total")
                       .Help("Worker processes restarted, by why the previous one ended")
                       .Register(registry);
  for (RestartReason r : kReasons) restarts_.push_back(&restarts.Add(with("reason", restart_reason_name(r))));
  up_ = &prometheus::BuildGauge()
             .Name("steno_workers_up")
             .Help("Worker processes started and ready")
             .Register(registry)
             .Add(labels);
  shared_weights_ = &prometheus::BuildGauge()
                         .Name("steno_shared_weight_bytes")
                         .Help("Device weights the worker processes share as one copy (0: not shared)")
                         .Register(registry)
                         .Add(labels);
  memory_ = &prometheus::BuildGauge()
                 .Name("steno_worker_memory_bytes")
                 .Help("Each worker's last reported memory: host resident set, device memory")
                 .Register(registry);
  for (int i = 0; i < workers; ++i) {
    prometheus::Labels l = with("worker", std::to_string(i));
    l["memory"] = "host";
    host_memory_.push_back(&memory_->Add(l));
  }
  device_memory_.assign(host_memory_.size(), nullptr);
}

void FleetMetrics::worker_restarted(RestartReason reason) { restarts_[static_cast<size_t>(reason)]->Increment(); }
void FleetMetrics::worker_up() { up_->Increment(); }
void FleetMetrics::worker_down() { up_->Decrement(); }
void FleetMetrics::set_shared_weight_bytes(uint64_t bytes) { shared_weights_->Set(static_cast<double>(bytes)); }

void FleetMetrics::set_worker_memory(int worker, uint64_t host_bytes, uint64_t device_bytes) {
  if (worker < 0 || static_cast<size_t>(worker) >= host_memory_.size()) return;
  const auto i = static_cast<size_t>(worker);
  if (host_bytes != kMemoryNotReported) host_memory_[i]->Set(static_cast<double>(host_bytes));
  if (device_bytes == kMemoryNotReported) return;
  std::lock_guard lock(memory_mu_);
  if (device_memory_[i] == nullptr)  // only once reported: a 0 would claim the worker holds no device memory
    device_memory_[i] = &memory_->Add(
        {{"model", model_}, {"version", version_}, {"device", device_}, {"worker", std::to_string(worker)},
         {"memory", "device"}});
  device_memory_[i]->Set(static_cast<double>(device_bytes));
}

}  // namespace steno::serve::fleet
