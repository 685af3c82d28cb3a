// The core's statistics: the Prometheus series under Triton's names and the KServe snapshot, both from one record
// of each event; and the per-request log line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "metrics_text.h"
#include "serve/completer.h"
#include "serve/statistics.h"
#include "steno/core/allocator.h"
#include "steno/core/cuda.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using testing::metric_value;

TEST(Metrics, FailureReasonsAreTritons) {
  EXPECT_STREQ(failure_reason(Outcome::kQueueFull), "REJECTED");
  EXPECT_STREQ(failure_reason(Outcome::kDeadlineExceeded), "REJECTED");
  EXPECT_STREQ(failure_reason(Outcome::kShuttingDown), "REJECTED");
  EXPECT_STREQ(failure_reason(Outcome::kCancelled), "CANCELED");
  EXPECT_STREQ(failure_reason(Outcome::kInternal), "BACKEND");
  EXPECT_STREQ(failure_reason(Outcome::kModelNotFound), "OTHER");
  EXPECT_STREQ(failure_reason(Outcome::kInvalidInput), "OTHER");
  EXPECT_STREQ(failure_reason(Outcome::kOverLimit), "OTHER");
}

TEST(Statistics, CountRequestsAndBatchesUnderTritonNamesAndInTheKServeSnapshot) {
  ServeStatistics metrics;
  ModelStatistics& m = metrics.add_model("tiny", "1");
  const std::map<std::string, std::string> labels = {{"model", "tiny"}, {"version", "1"}};

  // Every series exists from the start, at 0.
  std::string text = metrics.render();
  EXPECT_EQ(metric_value(text, "nv_inference_request_success", labels), 0.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "BACKEND"}}), 0.0);

  StageDurations d;
  d.compute_ms = 10;
  d.features_ms = 1;
  d.encoder_ms = 6;
  d.decoder_ms = 2;
  d.detokenize_ms = 0.5;
  m.batch_executed(2, 0.1, d);
  TranscriptionResponse ok;
  ok.durations.queue_ms = 2;
  ok.durations.compute_ms = 10;
  ok.batch_size = 2;
  ok.input_ms = 0.25;
  ok.audio_seconds = 1.5;
  m.request_finished(ok, 15);
  ok.audio_seconds = 2.5;
  m.request_finished(ok, 15);
  m.output_rendered(2, 0.5);
  m.output_rendered(2, 0.5);
  TranscriptionResponse failed;
  for (Outcome o : {Outcome::kQueueFull, Outcome::kDeadlineExceeded, Outcome::kCancelled, Outcome::kInternal,
                    Outcome::kInvalidInput}) {
    failed.outcome = o;
    m.request_finished(failed, 1);
  }
  m.set_pending(3);

  text = metrics.render();
  EXPECT_EQ(metric_value(text, "nv_inference_request_success", labels), 2.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "REJECTED"}}), 2.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "CANCELED"}}), 1.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "BACKEND"}}), 1.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "OTHER"}}), 1.0);
  EXPECT_EQ(metric_value(text, "nv_inference_compute_input_duration_us", labels), 500.0);
  EXPECT_EQ(metric_value(text, "nv_inference_compute_output_duration_us", labels), 1000.0);
  EXPECT_EQ(metric_value(text, "nv_inference_count", labels), 2.0);
  EXPECT_EQ(metric_value(text, "nv_inference_exec_count", labels), 1.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_duration_us", labels), 30000.0);
  EXPECT_EQ(metric_value(text, "nv_inference_queue_duration_us", labels), 4000.0);
  EXPECT_EQ(metric_value(text, "nv_inference_compute_infer_duration_us", labels), 20000.0);
  EXPECT_EQ(metric_value(text, "nv_inference_pending_request_count", labels), 3.0);
  EXPECT_EQ(metric_value(text, "steno_audio_seconds_total", labels), 4.0);
  EXPECT_EQ(metric_value(text, "steno_stage_duration_us", {{"stage", "encoder"}}), 6000.0);
  EXPECT_EQ(metric_value(text, "steno_stage_duration_us", {{"stage", "detokenize"}}), 500.0);
  EXPECT_EQ(metric_value(text, "steno_batch_size_count", labels), 1.0);
  EXPECT_EQ(metric_value(text, "steno_batch_size_sum", labels), 2.0);
  EXPECT_EQ(metric_value(text, "steno_padding_waste_bucket", {{"le", "0.1"}}), 1.0);
  EXPECT_EQ(metric_value(text, "steno_padding_waste_bucket", {{"le", "0.05"}}), 0.0);
  EXPECT_NE(text.find("# TYPE nv_inference_request_success counter"), std::string::npos);
  EXPECT_NE(text.find("# TYPE nv_inference_pending_request_count gauge"), std::string::npos);

  // The KServe view of the same events.
  const ModelStatsSnapshot s = m.snapshot();
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.inference_count, 2u);
  EXPECT_EQ(s.execution_count, 1u);
  EXPECT_EQ(s.success.count, 2u);
  EXPECT_EQ(s.success.ns, 2u * 15'000'000);
  EXPECT_EQ(s.fail.count, 5u);  // every failure, as nv_inference_request_failure summed over its reasons
  EXPECT_EQ(s.queue.ns, 2u * 2'000'000);
  EXPECT_EQ(s.compute_input.ns, 2u * 250'000);
  EXPECT_EQ(s.compute_infer.ns, 2u * 10'000'000);
  EXPECT_EQ(s.compute_output.count, 2u);
  ASSERT_EQ(s.batches.size(), 1u);
  EXPECT_EQ(s.batches[0].batch_size, 2);
  EXPECT_EQ(s.batches[0].compute_infer.count, 1u);  // one batch ran
  EXPECT_EQ(s.batches[0].compute_infer.ns, 10'000'000u);
  EXPECT_EQ(s.batches[0].compute_input.ns, 2u * 250'000);  // its requests' decoding
  EXPECT_GT(s.last_inference_ms, 0u);
}

TEST(Statistics, CountWhatTheExecutorPoolReports) {
  ServeStatistics metrics;
  ModelStatistics& m = metrics.add_model("tiny", "1");
  m.requests_replayed(3);
  m.request_poisoned();
  m.batch_split();
  m.set_batch_cap(0, 16);
  m.set_batch_cap(1, 4);
  m.set_batch_cap(1, 5);
  const std::string text = metrics.render();
  EXPECT_EQ(metric_value(text, "steno_replayed_requests_total", {{"model", "tiny"}}), 3.0);
  EXPECT_EQ(metric_value(text, "steno_poisoned_requests_total", {{"model", "tiny"}}), 1.0);
  EXPECT_EQ(metric_value(text, "steno_batch_splits_total", {{"model", "tiny"}}), 1.0);
  EXPECT_EQ(metric_value(text, "steno_batch_cap", {{"model", "tiny"}, {"executor", "0"}}), 16.0);
  EXPECT_EQ(metric_value(text, "steno_batch_cap", {{"model", "tiny"}, {"executor", "1"}}), 5.0);
}

// The process's own memory at each scrape, so that a soak can tell a leak from a cache filling towards its bound:
// the resident set as /proc has it, and the host cache's blocks as they are handed out and given back.
TEST(Statistics, HostMemoryIsReadAtEachScrape) {
  ServeStatistics metrics;
  const auto rss = metric_value(metrics.render(), "process_resident_memory_bytes", {});
  ASSERT_TRUE(rss.has_value());
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  ASSERT_TRUE(statm >> size >> resident);
  EXPECT_NEAR(*rss, static_cast<double>(resident) * sysconf(_SC_PAGESIZE), 64.0 * (1 << 20));
  EXPECT_GT(metric_value(metrics.render(), "process_open_fds", {}).value_or(-1), 2.0);  // stdin, stdout, stderr

  const std::map<std::string, std::string> in_use = {{"pool", "host"}, {"state", "in_use"}};
  const std::map<std::string, std::string> cached = {{"pool", "host"}, {"state", "cached"}};
  const size_t bytes = size_t{3} << 20;
  const double in_use_before = metric_value(metrics.render(), "steno_host_cache_bytes", in_use).value();
  const double cached_before = metric_value(metrics.render(), "steno_host_cache_bytes", cached).value();
  void* block = default_cpu_allocator().allocate(bytes);
  EXPECT_GE(metric_value(metrics.render(), "steno_host_cache_bytes", in_use).value(), in_use_before + bytes);
  default_cpu_allocator().deallocate(block, bytes);
  EXPECT_EQ(metric_value(metrics.render(), "steno_host_cache_bytes", in_use).value(), in_use_before);
  EXPECT_GE(metric_value(metrics.render(), "steno_host_cache_bytes", cached).value(), cached_before + bytes);
  EXPECT_EQ(metric_value(metrics.render(), "steno_host_cache_bytes", {{"pool", "pinned"}}).has_value(),
            cuda::pinned_pool_stats().has_value());
  EXPECT_TRUE(metric_value(metrics.render(), "steno_malloc_bytes", {{"state", "free"}}).has_value());
}

TEST(RequestLog, OneKeyValueLineWithClientStringsQuoted) {
  TranscriptionRequest r;
  r.id = "req-7";
  r.model = "evil\nmodel=x";
  r.pcm.assign(8000, 0.0f);
  TranscriptionResponse resp;
  resp.durations.queue_ms = 3.26;
  resp.durations.compute_ms = 12;
  resp.batch_size = 4;
  const std::string ok = request_log_line(r, resp);
  EXPECT_EQ(ok.find('\n'), std::string::npos);
  EXPECT_NE(ok.find("id=req-7 model=\"evil\\x0amodel=x\" outcome=ok audio_s=0.500 queue_ms=3.3"), std::string::npos)
      << ok;
  EXPECT_NE(ok.find("compute_ms=12.0 batch=4 features_ms="), std::string::npos) << ok;

  resp.outcome = Outcome::kDeadlineExceeded;
  resp.message = "deadline exceeded after 5 ms";
  const std::string failed = request_log_line(r, resp);
  EXPECT_NE(failed.find("outcome=deadline_exceeded"), std::string::npos) << failed;
  EXPECT_NE(failed.find("message=\"deadline exceeded after 5 ms\""), std::string::npos) << failed;
}

TEST(RequestCompleter, RecordsThenCallsDoneOnceAndSurvivesAThrowingCallback) {
  ServeStatistics metrics;
  RequestCompleter complete(&metrics.add_model("m", "1"));
  int calls = 0;
  auto r = testing::make_request("a", 16000);
  r->done = [&](TranscriptionResponse) {
    ++calls;
    throw std::runtime_error("client bug");
  };
  Completion c;
  c.request = std::move(r);
  EXPECT_NO_THROW(complete(std::move(c)));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(metric_value(metrics.render(), "nv_inference_request_success", {{"model", "m"}}), 1.0);
  EXPECT_EQ(metric_value(metrics.render(), "steno_audio_seconds_total", {{"model", "m"}}), 1.0);  // from its PCM
}

TEST(RequestCompleter, HandsTheRequestsWarningsAndInputTimeToItsAnswer) {
  RequestCompleter complete(nullptr);
  auto r = testing::make_request("a", 8000);
  r->model = "m";
  r->input_ms = 1.5;
  r->warnings = {"truncated: the file ends early"};
  TranscriptionResponse got;
  r->done = [&](TranscriptionResponse resp) { got = std::move(resp); };
  Completion c;
  c.request = std::move(r);
  complete(std::move(c));
  EXPECT_EQ(got.model, "m");
  EXPECT_EQ(got.input_ms, 1.5);
  EXPECT_EQ(got.audio_seconds, 0.5);
  EXPECT_EQ(got.warnings, std::vector<std::string>{"truncated: the file ends early"});
}

}  // namespace
}  // namespace steno::serve
