// A group restart (what the MPS mode does when one client faults: every worker of the GPU goes down together), on
// the CPU with real worker processes: the faulting worker's group is killed, the group's recovery (under MPS: the
// daemon's restart) runs once per fault with every worker of the group gone and seen gone, the poison request fails
// alone after its second crash, and the restarted group serves. (On the CPU the workers die at once; under MPS the
// daemon also needs its clients gone, which is why the recovery waits for all of them: see the GPU serving check.)
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "../child_processes.h"
#include "../metrics_text.h"
#include "serve/fleet/fault_group.h"
#include "serve/fleet/fleet_metrics.h"
#include "serve/fleet/worker_executor.h"
#include "serve/inference_core.h"
#include "steno/audio/decode.h"

namespace steno::serve {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kModelDir = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en";

// This process's live children: its worker processes.
std::vector<pid_t> children() { return steno::testing::child_processes(getpid()); }

int live_children() { return static_cast<int>(children().size()); }

// Worker processes of the bundled model that restart as a group after a fault (the recovery or group set after).
fleet::WorkerFleetConfig group_workers(int workers) {
  fleet::WorkerFleetConfig f;
  f.workers = workers;
  f.command.executable = STENO_BINARY;
  f.command.model_dir = kModelDir;
  f.command.threads = 1;
  f.restart_group_on_fault = true;
  return f;
}

// A model served by `f`'s workers a request at a time, restarted without delay.
ModelSpec worker_model(const std::string& name, const fleet::WorkerFleetConfig& f) {
  ModelSpec spec;
  spec.info.name = name;
  spec.info.max_audio_seconds = 60;
  spec.batcher.max_batch_size = 1;
  spec.batcher.max_queue_delay = 0us;
  spec.policy.restart.backoff_initial = 10ms;
  spec.executors = [f, name](prometheus::Registry& registry) {
    return fleet::worker_executors(f, std::make_unique<fleet::FleetMetrics>(registry, name, "1", f.workers));
  };
  return spec;
}

TEST(GroupRestart, NoWorkerStartsAgainUntilTheWholeGroupIsGoneAndRecovered) {
  spdlog::set_level(spdlog::level::off);  // the crashes' error lines are expected
  std::mutex mu;
  std::condition_variable cv;
  int recoveries = 0, alive_at_recovery = 0;
  double up_at_recovery = 0;
  InferenceCore* serving = nullptr;  // set once the core is built; the hook runs only after a fault

  fleet::WorkerFleetConfig f = group_workers(2);
  f.recover_group = [&] {
    std::lock_guard lock(mu);
    ++recoveries;
    alive_at_recovery += live_children();  // every worker of the group must be gone by now...
    // ... and seen gone by its executor: none counted up (the victims' executors notice at their own pace).
    up_at_recovery += testing::metric_value(serving->render_metrics(), "steno_workers_up", {}).value_or(-1);
  };
  CoreConfig config;
  config.enable_fault_injection = true;
  InferenceCore core({worker_model("m", f)}, config);
  serving = &core;

  const std::vector<float> pcm =
      audio::load_audio_file(std::string(STENO_TEST_DATA) + "/testset/espeak/audio/test-0000001.flac").samples;
  std::vector<TranscriptionResponse> answers(2);
  int answered = 0;
  // The poison request first, alone (the other worker idles), then an innocent one on the restarted group.
  for (int i = 0; i < 2; ++i) {
    Submission s;
    s.id = i == 0 ? "poison" : "innocent";
    s.model = "m";
    s.audio = PcmAudio{pcm, 16000};
    if (i == 0) s.fault = "crash";
    core.submit(std::move(s), [&, i](TranscriptionResponse r) {
      std::lock_guard lock(mu);
      answers[static_cast<size_t>(i)] = std::move(r);
      ++answered;
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 120s, [&] { return answered == i + 1; }));
  }
  EXPECT_EQ(answers[1].outcome, Outcome::kOk) << answers[1].message;
  EXPECT_EQ(answers[1].transcript.text, "the rent is seven pounds a month");
  EXPECT_EQ(answers[0].outcome, Outcome::kInternal);
  EXPECT_EQ(answers[0].message, "request crashed the worker twice; not retried");
  const std::string metrics = core.render_metrics();
  core.drain();
  std::lock_guard lock(mu);
  EXPECT_GE(recoveries, 1);           // once per group fault
  EXPECT_EQ(alive_at_recovery, 0);    // never with a worker of the faulted group still alive
  EXPECT_EQ(up_at_recovery, 0);
  EXPECT_GE(testing::metric_value(metrics, "steno_worker_restarts_total", {{"reason", "group"}}).value_or(0), 1.0)
      << metrics;
}


// A worker killed while idle had no GPU work outstanding: it restarts alone, and its group keeps running (under MPS
// a kill mid-batch still restarts the group: the test above's crash).
TEST(GroupRestart, AWorkerKilledWhileIdleRestartsAlone) {
  spdlog::set_level(spdlog::level::off);
  std::atomic<int> recoveries{0};
  fleet::WorkerFleetConfig f = group_workers(2);
  f.recover_group = [&] { ++recoveries; };
  InferenceCore core({worker_model("m", f)}, CoreConfig{});
  const std::vector<pid_t> before = children();
  ASSERT_EQ(before.size(), 2u);
  ASSERT_EQ(::kill(before[0], SIGKILL), 0);
  // Back to two workers: the killed one replaced, the other the same process.
  std::vector<pid_t> after;
  for (int i = 0; i < 600; ++i) {
    after = children();
    if (after.size() == 2 && std::find(after.begin(), after.end(), before[0]) == after.end() &&
        testing::metric_value(core.render_metrics(), "steno_workers_up", {}).value_or(0) == 2)
      break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(after.size(), 2u);
  EXPECT_NE(std::find(after.begin(), after.end(), before[1]), after.end()) << "the idle kill restarted the group";
  EXPECT_EQ(recoveries.load(), 0);
  const std::string metrics = core.render_metrics();
  EXPECT_EQ(testing::metric_value(metrics, "steno_worker_restarts_total", {{"reason", "signal"}}).value_or(0), 1.0)
      << metrics;
  EXPECT_EQ(testing::metric_value(metrics, "steno_worker_restarts_total", {{"reason", "group"}}).value_or(0), 0.0)
      << metrics;

  std::mutex mu;
  std::condition_variable cv;
  std::optional<TranscriptionResponse> answer;
  Submission s;
  s.id = "after-the-kill";
  s.model = "m";
  s.audio = PcmAudio{
      audio::load_audio_file(std::string(STENO_TEST_DATA) + "/testset/espeak/audio/test-0000001.flac").samples, 16000};
  core.submit(std::move(s), [&](TranscriptionResponse r) {
    std::lock_guard lock(mu);
    answer = std::move(r);
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 120s, [&] { return answer.has_value(); }));
  }
  EXPECT_EQ(answer->transcript.text, "the rent is seven pounds a month");
  core.drain();
}

// A fault opens a round that its recovery closes: a worker lost inside it went down with the group (the supervisor
// replays its batch uncharged even when its own exit beat the group's kill -- under MPS, a client that found its
// context broken by another's fault).
TEST(FaultGroupRound, OpensAtAFaultAndClosesAtItsRecovery) {
  struct Member : fleet::FaultGroup::Member {
    int taken_down = 0;
    void take_down(int) override { ++taken_down; }
    bool all_down() const override { return true; }
  } member;
  int recoveries = 0;
  fleet::FaultGroup group([&] { ++recoveries; });
  group.join(&member);
  EXPECT_FALSE(group.faulting());
  group.await_recovery(1s);  // nothing pending: no recovery
  EXPECT_EQ(recoveries, 0);
  group.fault(&member, 0);
  EXPECT_TRUE(group.faulting());
  EXPECT_EQ(member.taken_down, 1);
  group.await_recovery(1s);
  EXPECT_EQ(recoveries, 1);
  EXPECT_FALSE(group.faulting());
  group.leave(&member);
}

// Two fleets under one MPS daemon fault as one group (fault_group.h): the transcription model's and the diarizer's,
// here two models of the bundled ASR. A crash in one takes the other's worker down too; the group's recovery runs
// with every worker of both gone; both serve again.
TEST(GroupRestart, TwoFleetsInOneGroupGoDownAndComeBackTogether) {
  spdlog::set_level(spdlog::level::off);
  std::mutex mu;
  std::condition_variable cv;
  int recoveries = 0, alive_at_recovery = 0;
  auto group = std::make_shared<fleet::FaultGroup>([&] {
    std::lock_guard lock(mu);
    ++recoveries;
    alive_at_recovery += live_children();
  });
  std::vector<ModelSpec> specs;
  for (const char* name : {"a", "b"}) {
    fleet::WorkerFleetConfig f = group_workers(1);
    f.fault_group = group;
    specs.push_back(worker_model(name, f));
  }
  CoreConfig config;
  config.enable_fault_injection = true;
  InferenceCore core(std::move(specs), config);

  const std::vector<float> pcm =
      audio::load_audio_file(std::string(STENO_TEST_DATA) + "/testset/espeak/audio/test-0000001.flac").samples;
  const auto ask = [&](const std::string& model, const std::string& fault) {
    std::optional<TranscriptionResponse> answer;
    Submission s;
    s.id = model + "-" + (fault.empty() ? "plain" : fault);
    s.model = model;
    s.audio = PcmAudio{pcm, 16000};
    s.fault = fault;
    core.submit(std::move(s), [&](TranscriptionResponse r) {
      std::lock_guard lock(mu);
      answer = std::move(r);
      cv.notify_all();
    });
    std::unique_lock lock(mu);
    cv.wait_for(lock, 120s, [&] { return answer.has_value(); });
    return answer.value_or(TranscriptionResponse{});
  };
  EXPECT_EQ(ask("b", "").transcript.text, "the rent is seven pounds a month");
  const TranscriptionResponse poisoned = ask("a", "crash");
  EXPECT_EQ(poisoned.outcome, Outcome::kInternal);
  // Model b's worker was taken down with a's (its executor finds it a victim), and both came back.
  const TranscriptionResponse b = ask("b", "");
  EXPECT_EQ(b.outcome, Outcome::kOk) << b.message;
  EXPECT_EQ(b.transcript.text, "the rent is seven pounds a month");
  EXPECT_EQ(ask("a", "").transcript.text, "the rent is seven pounds a month");
  const std::string metrics = core.render_metrics();
  core.drain();
  std::lock_guard lock(mu);
  EXPECT_GE(recoveries, 1);
  EXPECT_EQ(alive_at_recovery, 0);  // never with a worker of either fleet alive
  EXPECT_GE(testing::metric_value(metrics, "steno_worker_restarts_total", {{"model", "b"}, {"reason", "group"}})
                .value_or(0),
            1.0)
      << metrics;
}

}  // namespace
}  // namespace steno::serve
