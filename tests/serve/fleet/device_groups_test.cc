// One model on two devices (`--device cpu,cpu`: two CPU device groups, each with its own executors and weights, as
// `cuda:0,1` is on a host of GPUs; on a GPU machine `cuda:0,0`, one GPU listed twice): one queue feeds both, /metrics
// counts each device on its own, and a device whose executors are taken out mid-load loses no request -- its
// batches are replayed on the other.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "fleet_harness.h"
#include "steno/core/cuda.h"

namespace steno::testing {
namespace {

using namespace std::chrono_literals;

const std::string kDevice0 = "device=\"cpu#0\"";
const std::string kDevice1 = "device=\"cpu#1\"";

TEST(DeviceGroups, LanesOnTwoDevicesShareOneQueueAndAreCountedApart) {
  const std::vector<Clip>& clips = short_clips();
  FleetServer server("--device cpu,cpu --executors 1 --threads-per-lane 1 --max-batch 1");
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_NE(server.log().find("2 lane(s) on cpu,cpu"), std::string::npos) << server.log();

  std::vector<Sent> sent;
  for (size_t i = 0; i < 12; ++i) sent.push_back({&clips[i % clips.size()], {}});
  const std::vector<Answer> answers = send_all(server, sent);
  expect_served_once(server, sent, answers);

  const std::string metrics = server.metrics();
  // Batches of one, twelve requests at once: each device's lane ran some, and together all of them.
  const double on0 = metric_sum(metrics, "steno_device_exec_count", kDevice0);
  const double on1 = metric_sum(metrics, "steno_device_exec_count", kDevice1);
  EXPECT_GT(on0, 0) << metrics;
  EXPECT_GT(on1, 0) << metrics;
  EXPECT_EQ(on0 + on1, 12) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_device_inference_count"), 12) << metrics;
  EXPECT_EQ(metric_sum(metrics, "nv_inference_exec_count"), 12) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_device_executors_up", kDevice0), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_device_executors_up", kDevice1), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_device_executor_losses_total"), 0) << metrics;
  EXPECT_NE(metrics.find("gpu_uuid=\"\""), std::string::npos) << metrics;  // a CPU has none
  EXPECT_EQ(metrics.find("nv_gpu_"), std::string::npos) << metrics;  // no GPU, no GPU gauges
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(DeviceGroups, ADeviceTakenOutUnderLoadLosesNoRequest) {
  const std::vector<Clip>& clips = long_clips();  // the references first: `steno transcribe` takes a while
  FleetServer server(
      "--device cpu,cpu --share processes --executors 1 --threads-per-lane 1 --max-batch 2 --heartbeat-ms 200");
  ASSERT_TRUE(server.started()) << server.log();
  ASSERT_TRUE(server.wait_for_workers(2)) << server.log();
  const std::vector<pid_t> workers = server.workers();
  ASSERT_EQ(workers.size(), 2u);
  const pid_t kept = workers[1];  // the other device's worker, and every worker started in its place, is killed

  std::vector<Sent> sent;
  for (size_t i = 0; i < 16; ++i) sent.push_back({&clips[i % clips.size()], {}});
  auto load = std::async(std::launch::async, [&] { return send_all(server, sent); });
  ASSERT_TRUE(wait_for_completions(server, 1, 60)) << server.log();  // both devices are mid-batch
  int kills = 0;
  while (load.wait_for(10ms) != std::future_status::ready)  // often enough to end a new one before it is up
    for (pid_t pid : server.workers())
      if (pid != kept && ::kill(pid, SIGKILL) == 0) ++kills;
  const std::vector<Answer> answers = load.get();

  expect_served_once(server, sent, answers);
  ASSERT_GE(kills, 1);
  const std::string metrics = server.metrics();
  // Which device was taken out is the one with the losses; the other one ran what it could not.
  const double lost0 = metric_sum(metrics, "steno_device_executor_losses_total", kDevice0);
  const double lost1 = metric_sum(metrics, "steno_device_executor_losses_total", kDevice1);
  EXPECT_TRUE((lost0 == 0) != (lost1 == 0)) << metrics;
  EXPECT_GE(lost0 + lost1, 1) << metrics;
  const std::string survivor = lost0 == 0 ? kDevice0 : kDevice1;
  EXPECT_GT(metric_sum(metrics, "steno_device_exec_count", survivor), 0) << metrics;
  EXPECT_GE(metric_sum(metrics, "steno_replayed_requests_total"), 1) << metrics;  // killed mid-batch
  EXPECT_EQ(metric_sum(metrics, "steno_poisoned_requests_total"), 0) << metrics;
  EXPECT_GE(metric_sum(metrics, "steno_worker_restarts_total", lost0 == 0 ? kDevice1 : kDevice0), 1) << metrics;

  // Left alone, the device comes back: its worker restarts (the backoff resets) and both devices are up.
  EXPECT_TRUE(server.wait_for_workers(2, 60)) << server.metrics();
  EXPECT_EQ(metric_sum(server.metrics(), "steno_device_executors_up"), 2) << server.metrics();
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// One GPU listed twice, in every sharing mode this machine has: two groups with a weight copy each, both fed, both
// counted under the GPU's UUID. f32, whose transcripts are the CPU engine's (`steno transcribe`'s references).
class DeviceGroupsOnOneGpu : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceGroupsOnOneGpu, BothGroupsServe) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string mode = GetParam();
  if (mode.find("mps") != std::string::npos &&
      (::geteuid() != 0 || (::access("/usr/local/nvidia/bin/nvidia-cuda-mps-control", X_OK) != 0 &&
                            std::system("command -v nvidia-cuda-mps-control >/dev/null") != 0)))
    GTEST_SKIP() << "MPS needs root and nvidia-cuda-mps-control";
  const std::vector<Clip>& clips = short_clips();
  FleetServer server("--device cuda:0,0 --dtype f32 --executors 2 --max-batch 2 " + mode);
  ASSERT_TRUE(server.started()) << server.log();
  std::vector<Sent> sent;
  for (size_t i = 0; i < 24; ++i) sent.push_back({&clips[i % clips.size()], {}});
  const std::vector<Answer> answers = send_all(server, sent);
  expect_served_once(server, sent, answers);
  const std::string metrics = server.metrics();
  EXPECT_GT(metric_sum(metrics, "steno_device_exec_count", "device=\"cuda:0#0\""), 0) << metrics;
  EXPECT_GT(metric_sum(metrics, "steno_device_exec_count", "device=\"cuda:0#1\""), 0) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_device_executors_up"), 4) << metrics;
  EXPECT_NE(metrics.find("gpu_uuid=\"GPU-"), std::string::npos) << metrics;
  // Triton's GPU gauges from NVML, for the one GPU (listed twice, reported once).
  const double utilization = metric_sum(metrics, "nv_gpu_utilization", "gpu_uuid=\"GPU-");
  EXPECT_GE(utilization, 0.0) << metrics;  // -1: absent
  EXPECT_LE(utilization, 1.0) << metrics;
  EXPECT_GT(metric_sum(metrics, "nv_gpu_memory_total_bytes"), 1e9) << metrics;
  EXPECT_GT(metric_sum(metrics, "nv_gpu_memory_used_bytes"), 0) << metrics;
  EXPECT_GT(metric_sum(metrics, "nv_gpu_power_limit"), 0) << metrics;
  EXPECT_GT(metric_sum(metrics, "nv_gpu_power_usage"), 0) << metrics;
  EXPECT_GE(metric_sum(metrics, "nv_energy_consumption"), 0) << metrics;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

INSTANTIATE_TEST_SUITE_P(Modes, DeviceGroupsOnOneGpu,
                         ::testing::Values("--share lanes", "--share processes", "--share green --green-sms 32",
                                           "--share mps"),
                         [](const auto& info) { return info.param.substr(8, info.param.find(' ', 8) - 8); });

}  // namespace
}  // namespace steno::testing
