// Chaos on the two-service server: `steno serve` with the transcription model in a worker process and the diarizer
// in worker processes of its own. While a client keeps transcribing, the diarizer is hurt -- a worker killed in the
// middle of its batches, its device faulted, its queue filled -- and every transcription must still be the clip's
// transcript, none refused, none kept waiting behind the diarizer's trouble. On a GPU under MPS the device fault is a
// real trapping kernel, which faults every client of the MPS server: that run is the H200's, not these tests'.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "fleet_harness.h"

namespace steno::testing {
namespace {

using namespace std::chrono_literals;

const std::string kDiarizerDir = std::string(STENO_SOURCE_DIR) + "/models/steno-sortformer-small";
// No transcription may take this long: far beyond a short clip's time on a loaded two-core machine, it catches a
// transcription that waited for the diarizer's restart or queue (a bound on isolation, not a speed measurement).
constexpr auto kNoWaitBehindTheDiarizer = 10s;

// A client that transcribes the short clips one after another, on its own thread, until stopped.
class TranscriptionProbe {
 public:
  struct Result {
    int status = 0;
    bool right = false;
    std::chrono::milliseconds took{};
    std::string detail;
  };

  explicit TranscriptionProbe(uint16_t port) : clips_(short_clips()), thread_([this, port] { run(port); }) {}
  ~TranscriptionProbe() { stop(); }

  // Waits until `n` transcriptions more than now are answered; false after `timeout`.
  bool wait_for_more(size_t n, std::chrono::seconds timeout = 60s) {
    std::unique_lock lock(mu_);
    const size_t want = results_.size() + n;
    return answered_.wait_for(lock, timeout, [&] { return results_.size() >= want; });
  }

  std::vector<Result> stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(mu_);
    return results_;
  }

 private:
  void run(uint16_t port) {
    for (size_t i = 0; !stop_; ++i) {
      const Clip& clip = clips_[i % clips_.size()];
      const auto start = std::chrono::steady_clock::now();
      const Answer a = transcribe(port, clip.path, {}, 60);
      const auto took =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      std::lock_guard lock(mu_);
      results_.push_back({a.status, a.status == 200 && a.text == clip.transcript, took, clip.path + ": " + a.text});
      answered_.notify_all();
    }
  }

  const std::vector<Clip>& clips_;  // their references made before the thread starts
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable answered_;
  std::vector<Result> results_;
  std::thread thread_;  // last: starts once the rest is set up
};

void expect_transcriptions_undisturbed(const std::vector<TranscriptionProbe::Result>& results) {
  ASSERT_GE(results.size(), 4u) << "the probe hardly ran";
  for (const auto& r : results) {
    EXPECT_EQ(r.status, 200) << r.detail;
    EXPECT_TRUE(r.right) << r.detail;
    EXPECT_LT(r.took, kNoWaitBehindTheDiarizer) << r.detail;
  }
}

// The server's diarizer workers: its children loading the diarizer's directory.
std::vector<pid_t> diarizer_workers(const FleetServer& server) {
  std::vector<pid_t> out;
  for (pid_t pid : server.workers()) {
    std::string cmdline = read_file("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("steno-sortformer-small") != std::string::npos) out.push_back(pid);
  }
  return out;
}

ClientResponse diarize(const FleetServer& server, const Headers& extra = {}) {
  return diarize_rttm(server.port(), conversation_clip(), extra);
}

std::string two_services(const std::string& extra) {
  return "--share processes --executors 1 --threads-per-lane 1 --model diarizer=" + kDiarizerDir +
         " --diarizer-share processes --heartbeat-ms 100 " + extra;
}

TEST(Chaos, ADiarizerWorkerKilledMidBatchLeavesTranscriptionsRight) {
  const std::string& want = conversation_rttm();
  // One diarization a batch: both workers busy, two more queued, when one is killed.
  FleetServer server(two_services("--diarizer-lanes 2 --diarizer-max-batch 1"));
  ASSERT_TRUE(server.started()) << server.log();
  ASSERT_TRUE(server.wait_for_workers(3)) << server.log();
  const std::vector<pid_t> victims = diarizer_workers(server);
  ASSERT_EQ(victims.size(), 2u) << server.log();

  TranscriptionProbe probe(server.port());
  ASSERT_TRUE(probe.wait_for_more(2));  // transcribing before the chaos, and on through it
  std::vector<std::future<ClientResponse>> diarizations;
  for (int i = 0; i < 4; ++i)
    diarizations.push_back(std::async(std::launch::async, [&] { return diarize(server); }));
  std::this_thread::sleep_for(300ms);  // uploaded and running on both workers
  ::kill(victims[0], SIGKILL);
  for (auto& d : diarizations) {
    const ClientResponse r = d.get();
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body, want);  // replayed on the replacement
  }
  EXPECT_TRUE(server.wait_for_workers(3)) << server.metrics();
  EXPECT_TRUE(probe.wait_for_more(2));  // and after the restart
  expect_transcriptions_undisturbed(probe.stop());

  const std::string metrics = server.metrics();
  EXPECT_GE(metric_sum(metrics, "steno_worker_restarts_total", "model=\"steno-sortformer-small\""), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total", "model=\"steno-tdt-small-en\""), 0) << metrics;
  EXPECT_GE(metric_sum(metrics, "steno_replayed_requests_total", "model=\"steno-sortformer-small\""), 1) << metrics;
  EXPECT_FALSE(process_exists(victims[0]));
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(Chaos, ADiarizerDeviceFaultLeavesTranscriptionsRight) {
  const std::string& want = conversation_rttm();
  // On a CPU the injected device fault is a bus error of the worker (on a GPU, a trapping kernel): either way the
  // worker dies mid-batch, the batch is replayed, and the request carrying the fault is poisoned after two.
  FleetServer server(two_services("--diarizer-lanes 2 --enable-fault-injection"));
  ASSERT_TRUE(server.started()) << server.log();
  ASSERT_TRUE(server.wait_for_workers(3)) << server.log();

  TranscriptionProbe probe(server.port());
  ASSERT_TRUE(probe.wait_for_more(2));
  auto faulted = std::async(std::launch::async, [&] { return diarize(server, {{"X-Steno-Fault", "device-fault"}}); });
  auto plain = std::async(std::launch::async, [&] { return diarize(server); });
  const ClientResponse f = faulted.get();
  EXPECT_EQ(f.status, 500) << f.body;
  const ClientResponse p = plain.get();
  EXPECT_EQ(p.status, 200) << p.body;
  EXPECT_EQ(p.body, want);
  EXPECT_TRUE(server.wait_for_workers(3)) << server.metrics();
  const ClientResponse after = diarize(server);
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.body, want);
  EXPECT_TRUE(probe.wait_for_more(2));
  expect_transcriptions_undisturbed(probe.stop());

  const std::string metrics = server.metrics();
  EXPECT_GE(metric_sum(metrics, "steno_worker_restarts_total", "model=\"steno-sortformer-small\""), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total", "model=\"steno-tdt-small-en\""), 0) << metrics;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(Chaos, WithTheTranscriberInLanesOnlyTheDiarizerTakesInjectedFaults) {
  // The GPU's chaos run keeps the transcriber in lanes beside the diarizer's workers: the server starts with fault
  // injection when one model has worker processes, and the lanes' model refuses the header instead of ignoring it.
  FleetServer server("--threads-per-lane 1 --model diarizer=" + kDiarizerDir +
                      " --diarizer-share processes --diarizer-lanes 1 --enable-fault-injection");
  ASSERT_TRUE(server.started()) << server.log();
  const Clip& clip = short_clips()[0];
  const Answer refused = transcribe(server.port(), clip.path, {{"X-Steno-Fault", "crash"}});
  EXPECT_EQ(refused.status, 400) << refused.text;
  EXPECT_NE(refused.text.find("X-Steno-Fault needs worker processes, and model 'steno-tdt-small-en' runs in lanes"),
            std::string::npos)
      << refused.text;
  const ClientResponse crashed = diarize(server, {{"X-Steno-Fault", "crash"}});
  EXPECT_EQ(crashed.status, 500) << crashed.body;
  const Answer plain = transcribe(server.port(), clip.path);
  EXPECT_EQ(plain.status, 200) << plain.text;
  EXPECT_EQ(plain.text, clip.transcript);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(Chaos, AFullDiarizerQueueLeavesTranscriptionsRight) {
  const std::string& want = conversation_rttm();
  // Each model has its own queue: the diarizer's, two deep, fills at once; the transcriber's must not notice.
  FleetServer server(two_services("--diarizer-lanes 1 --diarizer-max-batch 1 --max-queue-size 2"));
  ASSERT_TRUE(server.started()) << server.log();
  ASSERT_TRUE(server.wait_for_workers(2)) << server.log();

  TranscriptionProbe probe(server.port());
  ASSERT_TRUE(probe.wait_for_more(2));
  std::vector<std::future<ClientResponse>> diarizations;
  for (int i = 0; i < 10; ++i)
    diarizations.push_back(std::async(std::launch::async, [&] { return diarize(server); }));
  int served = 0, refused = 0;
  for (auto& d : diarizations) {
    const ClientResponse r = d.get();
    if (r.status == 200) {
      ++served;
      EXPECT_EQ(r.body, want);
    } else {
      ++refused;
      EXPECT_EQ(r.status, 429) << r.body;
    }
  }
  EXPECT_GE(refused, 1) << "the diarizer's queue never filled";
  EXPECT_GE(served, 1);
  EXPECT_TRUE(probe.wait_for_more(2));
  expect_transcriptions_undisturbed(probe.stop());
  const std::string metrics = server.metrics();
  EXPECT_EQ(metric_sum(metrics, "nv_inference_request_failure", "model=\"steno-tdt-small-en\""), 0) << metrics;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace steno::testing
