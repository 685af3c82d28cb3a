// Supervision for real: workers SIGKILLed and SIGSTOPped under load, a request that crashes its worker, one that
// hangs it, one that faults its device, one that runs out of memory. Every request is answered exactly once --
// counted by the server's own completion log lines per request id -- with the transcript `steno transcribe`
// gives, except the poison request, which alone gets a 500 saying why.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <set>
#include <thread>

#include "fleet_harness.h"

namespace steno::testing {
namespace {

using namespace std::chrono_literals;

TEST(FleetFaults, EveryRequestIsAnsweredOnceWhenWorkersAreKilledAndStoppedUnderLoad) {
  const std::vector<Clip>& clips = long_clips();  // the references first: `steno transcribe` takes a while
  FleetServer server("--share processes --executors 3 --threads-per-lane 1 --max-batch 4 --heartbeat-ms 400");
  ASSERT_TRUE(server.started()) << server.log();
  const std::vector<pid_t> workers = server.workers();
  ASSERT_EQ(workers.size(), 3u);

  std::vector<Sent> sent;
  for (size_t i = 0; i < 36; ++i) sent.push_back({&clips[i % clips.size()], {}});
  auto load = std::async(std::launch::async, [&] { return send_all(server, sent); });

  // Once the first batch is answered, the queue is deep and every worker is in the middle of a batch.
  ASSERT_TRUE(wait_for_completions(server, 1, 60)) << server.log();
  ::kill(workers[0], SIGSTOP);  // hung: no heartbeats; found within 5 intervals and SIGKILLed
  ::kill(workers[1], SIGKILL);  // dead: its socket closes at once
  const std::vector<Answer> answers = load.get();

  expect_served_once(server, sent, answers);
  EXPECT_TRUE(server.wait_for_workers(3)) << server.metrics();
  const std::string metrics = server.metrics();
  EXPECT_GE(metric_sum(metrics, "steno_worker_restarts_total", "reason=\"signal\""), 1) << metrics;
  EXPECT_GE(metric_sum(metrics, "steno_worker_restarts_total", "reason=\"hang\""), 1) << metrics;
  EXPECT_GE(metric_sum(metrics, "steno_replayed_requests_total"), 1) << metrics;  // they were mid-batch
  EXPECT_EQ(metric_sum(metrics, "steno_poisoned_requests_total"), 0) << metrics;
  EXPECT_FALSE(process_exists(workers[0])) << "the stopped worker was not killed";
  EXPECT_FALSE(process_exists(workers[1]));
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(FleetFaults, APoisonRequestFailsAloneAndTheOthersGetTheirTranscripts) {
  const std::vector<Clip>& clips = short_clips();
  FleetServer server(
      "--share processes --executors 2 --threads-per-lane 1 --max-batch 8 --max-queue-delay-ms 100 "
      "--heartbeat-ms 250 --enable-fault-injection");
  ASSERT_TRUE(server.started()) << server.log();

  std::vector<Sent> sent;
  for (size_t i = 0; i < 12; ++i) sent.push_back({&clips[i % clips.size()], {}});
  const size_t poison = 5;
  sent[poison].headers = {{"X-Steno-Fault", "crash"}};
  const std::vector<Answer> answers = send_all(server, sent);

  expect_served_once(server, sent, answers, poison);
  EXPECT_EQ(answers[poison].status, 500) << answers[poison].text;
  EXPECT_NE(answers[poison].text.find("request crashed the worker twice; not retried"), std::string::npos)
      << answers[poison].text;

  // The fleet recovers: both workers back, and serving.
  EXPECT_TRUE(server.wait_for_workers(2)) << server.metrics();
  const Answer after = transcribe(server.port(), short_clips()[0].path);
  EXPECT_EQ(after.status, 200) << after.text;
  EXPECT_EQ(after.text, short_clips()[0].transcript);
  const std::string metrics = server.metrics();
  EXPECT_EQ(metric_sum(metrics, "steno_poisoned_requests_total"), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total", "reason=\"signal\""), 2) << metrics;  // SIGABRT x2
  EXPECT_NE(server.log().find("injected crash"), std::string::npos);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(FleetFaults, AHangingRequestIsKilledAtItsBatchDeadlineAndFailsAlone) {
  const std::vector<Clip>& clips = short_clips();
  FleetServer server(
      "--share processes --executors 2 --threads-per-lane 1 --max-batch 1 --batch-timeout-s 1 --heartbeat-ms 250 "
      "--enable-fault-injection");
  ASSERT_TRUE(server.started()) << server.log();
  const std::vector<Sent> sent = {{&clips[0], {{"X-Steno-Fault", "hang"}}}, {&clips[1], {}}, {&clips[2], {}}};
  const std::vector<Answer> answers = send_all(server, sent);
  expect_served_once(server, sent, answers, 0);
  EXPECT_EQ(answers[0].status, 500) << answers[0].text;
  EXPECT_NE(answers[0].text.find("request hung the worker twice; not retried"), std::string::npos) << answers[0].text;
  const std::string metrics = server.metrics();
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total", "reason=\"hang\""), 2) << metrics;
  EXPECT_NE(server.log().find("ran past its deadline"), std::string::npos) << server.log();
  EXPECT_TRUE(server.wait_for_workers(2)) << server.metrics();
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(FleetFaults, ADeviceFaultKillsTheWorkerAndIsTreatedAsACrash) {
  const Clip& clip = short_clips()[3];
  FleetServer server("--share processes --executors 1 --threads-per-lane 1 --enable-fault-injection");
  ASSERT_TRUE(server.started()) << server.log();
  const Answer a = transcribe(server.port(), clip.path, {{"X-Steno-Fault", "device-fault"}});
  EXPECT_EQ(a.status, 500) << a.text;
  EXPECT_NE(a.text.find("request crashed the worker twice"), std::string::npos) << a.text;
  EXPECT_NE(server.log().find("injected device fault on cpu"), std::string::npos) << server.log();
  const Answer b = transcribe(server.port(), clip.path);
  EXPECT_EQ(b.status, 200) << b.text;
  EXPECT_EQ(b.text, clip.transcript);

  const Answer bad = transcribe(server.port(), clip.path, {{"X-Steno-Fault", "explode"}});
  EXPECT_EQ(bad.status, 400) << bad.text;
  EXPECT_NE(bad.text.find("X-Steno-Fault must be crash, hang, device-fault or oom"), std::string::npos) << bad.text;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

TEST(FleetFaults, ABatchThatRunsOutOfMemoryIsSplitAndRetriedAndTheCapShrinks) {
  const std::vector<Clip>& clips = short_clips();
  FleetServer server(
      "--share processes --executors 1 --threads-per-lane 1 --max-batch 8 --max-queue-delay-ms 500 "
      "--enable-fault-injection");
  ASSERT_TRUE(server.started()) << server.log();
  std::vector<Sent> sent;
  for (size_t i = 0; i < 8; ++i) sent.push_back({&clips[i], {}});
  sent[2].headers = {{"X-Steno-Fault", "oom"}};
  const std::vector<Answer> answers = send_all(server, sent);

  expect_served_once(server, sent, answers);  // the oom request too: alone, it runs
  const std::string metrics = server.metrics();
  EXPECT_GE(metric_sum(metrics, "steno_batch_splits_total"), 1) << metrics;
  EXPECT_LE(metric_sum(metrics, "steno_batch_cap"), 4) << metrics;
  EXPECT_GE(metric_sum(metrics, "steno_batch_cap"), 1) << metrics;
  EXPECT_EQ(metric_sum(metrics, "steno_worker_restarts_total"), 0) << metrics;  // memory pressure is no crash
  EXPECT_NE(server.log().find("ran out of memory"), std::string::npos);
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace steno::testing
