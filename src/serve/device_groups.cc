#include "serve/device_groups.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>

#include "steno/core/cuda.h"

namespace steno::serve {
namespace {

// An executor of a device group: the inner executor's behaviour under the group's name.
class GroupedExecutor final : public Executor {
 public:
  GroupedExecutor(int group, const std::string& group_name, std::unique_ptr<Executor> inner)
      : group_(group),
        name_(group_name.empty() ? inner->name() : group_name + " " + inner->name()),
        inner_(std::move(inner)) {}

  const std::string& name() const override { return name_; }
  int device_group() const override { return group_; }
  int max_batch_size() const override { return inner_->max_batch_size(); }
  std::optional<std::string> start() override { return inner_->start(); }
  bool up() const override { return inner_->up(); }
  BatchRun run(const Batch& batch) override { return inner_->run(batch); }
  std::chrono::milliseconds idle_check_interval() const override { return inner_->idle_check_interval(); }
  Loss check_idle() override { return inner_->check_idle(); }
  void release_cached_memory() override { inner_->release_cached_memory(); }
  void stop() override { inner_->stop(); }

 private:
  int group_;
  std::string name_;
  std::unique_ptr<Executor> inner_;
};

}  // namespace

std::vector<DeviceGroup> device_groups(const std::vector<Device>& devices) {
  std::map<std::string, int> listed;  // how often each device is listed
  for (const Device& d : devices) ++listed[d.str()];
  std::map<std::string, int> seen;
  std::vector<DeviceGroup> groups;
  for (const Device& d : devices) {
    DeviceGroup g;
    g.device = d;
    g.name = d.str();
    if (listed[g.name] > 1) g.name += fmt::format("#{}", seen[d.str()]++);
    if (!d.is_cpu()) {
      try {
        g.gpu_uuid = cuda::device_info(d.index).uuid;
      } catch (const std::exception& e) {  // the model's load says why the device cannot be used
        spdlog::debug("no UUID for {}: {}", d.str(), e.what());
      }
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

std::vector<std::unique_ptr<Executor>> in_device_group(int group, const std::string& group_name,
                                                       std::vector<std::unique_ptr<Executor>> executors) {
  std::vector<std::unique_ptr<Executor>> out;
  for (auto& e : executors) out.push_back(std::make_unique<GroupedExecutor>(group, group_name, std::move(e)));
  return out;
}

}  // namespace steno::serve
