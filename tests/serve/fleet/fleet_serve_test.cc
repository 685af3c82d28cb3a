// `steno serve --share processes` serving for real: transcripts equal to `steno transcribe`'s, worker processes
// that are children of the server and are gone after SIGTERM, and the modes this machine cannot run refused
// with a clear message.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <thread>

#include "../../cli_util.h"
#include "fleet_harness.h"

namespace steno::testing {
namespace {

using namespace std::chrono_literals;

TEST(FleetServe, WorkerProcessesServeTheTranscriptsOfSteno_Transcribe) {
  std::vector<Clip> clips = short_clips();
  clips.push_back(long_clips().front());
  FleetServer server("--share processes --executors 2 --threads-per-lane 1 --max-batch 4 --heartbeat-ms 100");
  ASSERT_TRUE(server.started()) << server.log();
  const std::vector<pid_t> workers = server.workers();
  EXPECT_EQ(workers.size(), 2u) << server.log();

  // Without --enable-fault-injection the fault header means nothing: the request is served like the others.
  const Headers fault = {{"X-Steno-Fault", "crash"}};
  std::vector<std::future<Answer>> answers;
  for (size_t i = 0; i < clips.size(); ++i)
    answers.push_back(std::async(std::launch::async, [&server, &clips, &fault, i] {
      return transcribe(server.port(), clips[i].path, i == 0 ? fault : Headers{});
    }));
  for (size_t i = 0; i < clips.size(); ++i) {
    const Answer a = answers[i].get();
    EXPECT_EQ(a.status, 200) << clips[i].path << ": " << a.text;
    EXPECT_EQ(a.text, clips[i].transcript) << clips[i].path;
  }
  std::string metrics = server.metrics();
  for (int i = 0; i < 50 && metric_sum(metrics, "steno_worker_memory_bytes", "worker=\"1\"") <= 0; ++i) {
    std::this_thread::sleep_for(100ms);  // until both workers' heartbeats have been read
    metrics = server.metrics();
  }
  EXPECT_EQ(metric_sum(metrics, "steno_workers_up"), 2) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total"), 0) << metrics;
  // Each worker's resident set: at least the model's weights (15 MB) and the runtime.
  EXPECT_GT(metric_sum(metrics, "steno_worker_memory_bytes", "worker=\"0\""), 15e6) << metrics;
  EXPECT_GT(metric_sum(metrics, "steno_worker_memory_bytes", "worker=\"1\""), 15e6) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_memory_bytes", "memory=\"device\""), -1) << metrics;  // CPU: none
  EXPECT_EQ(metric_sum(metrics, "nv_inference_request_success"), static_cast<double>(clips.size())) << metrics;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

// The diarizer in worker processes of its own (--diarizer-share processes) beside the transcription model's:
// its RTTM is `steno diarize`'s, and a worker that crashes on a diarization is replaced and the batch replayed.
TEST(FleetServe, DiarizerWorkerProcessesAnswerAsSteno_DiarizeAndSurviveACrash) {
  const std::string& want = conversation_rttm();
  FleetServer server("--share processes --executors 1 --threads-per-lane 1 --model diarizer=" +
                      std::string(STENO_SOURCE_DIR) + "/models/steno-sortformer-small --diarizer-share processes "
                      "--diarizer-lanes 2 --heartbeat-ms 100 --enable-fault-injection");
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_EQ(server.workers().size(), 3u) << server.log();  // one transcription worker, two diarization workers

  const auto diarize = [&](const Headers& extra) { return diarize_rttm(server.port(), conversation_clip(), extra); };
  const ClientResponse plain = diarize({});
  EXPECT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.body, want);
  const ClientResponse crashed = diarize({{"X-Steno-Fault", "crash"}});  // crashes once, then runs on a new worker
  EXPECT_EQ(crashed.status, 500) << crashed.body;  // the fault rides along on the replay: poisoned after two
  const std::string metrics = server.metrics();
  EXPECT_GE(metric_sum(metrics, "steno_worker_restarts_total", "model=\"steno-sortformer-small\""), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total", "model=\"steno-tdt-small-en\""), 0) << metrics;
  const ClientResponse after = diarize({});  // the replaced worker serves
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.body, want);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(FleetServe, SigtermDrainsTheRequestsInFlightAndLeavesNoWorkerBehind) {
  const Clip& clip = long_clips()[1];
  FleetServer server("--share processes --executors 2 --threads-per-lane 1");
  ASSERT_TRUE(server.started()) << server.log();
  const std::vector<pid_t> workers = server.workers();
  ASSERT_EQ(workers.size(), 2u);

  std::vector<std::future<Answer>> answers;
  for (int i = 0; i < 4; ++i)
    answers.push_back(std::async(std::launch::async, [&] { return transcribe(server.port(), clip.path); }));
  std::this_thread::sleep_for(300ms);  // the requests are read and queued or running
  EXPECT_EQ(server.stop(), 0) << server.log();
  for (auto& f : answers) {
    const Answer a = f.get();
    EXPECT_EQ(a.status, 200) << a.text;
    EXPECT_EQ(a.text, clip.transcript);
  }
  for (pid_t w : workers) EXPECT_FALSE(process_exists(w)) << "worker " << w << " outlived the server";
}

TEST(FleetServe, AWorkerNeverOutlivesAKilledServer) {
  FleetServer server("--share processes --executors 2 --threads-per-lane 1");
  ASSERT_TRUE(server.started()) << server.log();
  const std::vector<pid_t> workers = server.workers();
  ASSERT_EQ(workers.size(), 2u);
  ::kill(server.pid(), SIGKILL);  // no drain: the parent-death signal and the closed socket end the workers
  for (pid_t w : workers) {
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = !process_exists(w);
      if (!gone) std::this_thread::sleep_for(50ms);
    }
    EXPECT_TRUE(gone) << "worker " << w << " outlived its server";
  }
}

TEST(FleetServe, ModesThisMachineCannotRunFailClearly) {
  int rc = 0;
  std::string out = run(std::string(STENO_BINARY) + " serve --port 0 --share mps", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--share mps runs worker processes under CUDA MPS"), std::string::npos) << out;
  EXPECT_NE(out.find("nvidia-cuda-mps-control"), std::string::npos) << out;

  // With a CUDA device asked for, the MPS daemon itself cannot be had here.
  out = run(std::string(STENO_BINARY) + " serve --port 0 --share mps --device cuda --executors 2", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("MPS was asked for but cannot be had here"), std::string::npos) << out;

  out = run(std::string(STENO_BINARY) + " serve --port 0 --share green --green-sms 16 --executors 2", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--share green binds lanes to CUDA green contexts"), std::string::npos) << out;
  EXPECT_NE(out.find("12.4"), std::string::npos) << out;

  out = run(std::string(STENO_BINARY) + " serve --port 0 --share green", &rc);  // without its SM count
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("share green needs green_sms"), std::string::npos) << out;

  out = run(std::string(STENO_BINARY) + " serve --port 0 --share threads", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--share: 'threads' is not lanes, processes, mps or green"), std::string::npos) << out;

  // One device copy of the weights for worker processes: not for lanes (they share one already), not on the CPU.
  out = run(std::string(STENO_BINARY) + " serve --port 0 --share-weights", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("share_weights shares one device copy of the weights among worker processes: it needs share "
                     "processes or mps on a CUDA device (share is 'lanes', device cpu)"),
            std::string::npos)
      << out;
  out = run(std::string(STENO_BINARY) + " serve --port 0 --share processes --executors 2 --share-weights", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("(share is 'processes', device cpu)"), std::string::npos) << out;

  // A worker makes the shared copy or maps it, never both (the server never asks for both).
  out = run(std::string(STENO_BINARY) + " worker --socket-fd 99 --export-weights --import-weights-fd 4", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("--export-weights and --import-weights-fd exclude each other"), std::string::npos) << out;

  out = run(std::string(STENO_BINARY) + " serve --port 0 --enable-fault-injection", &rc);  // lanes by default
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("enable_fault_injection needs worker processes"), std::string::npos) << out;
}

TEST(FleetServe, AWorkerThatCannotLoadTheModelFailsTheStartUp) {
  int rc = 0;
  const std::string out =
      run(std::string(STENO_BINARY) + " serve --port 0 --share processes --model /nonexistent/model", &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("worker 0 could not start"), std::string::npos) << out;
  EXPECT_NE(out.find("exited before it was ready"), std::string::npos) << out;
}

}  // namespace
}  // namespace steno::testing
