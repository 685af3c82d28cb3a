// The Prometheus metrics under Triton's names, and the per-request log line.
#include <gtest/gtest.h>

#include "metrics_text.h"
#include "steno/serve/completer.h"
#include "steno/serve/metrics.h"
#include "test_requests.h"

namespace steno::serve {
namespace {

using testing::metric_value;

TEST(Metrics, FailureReasonsAreTritons) {
  EXPECT_STREQ(failure_reason(Outcome::kQueueFull), "REJECTED");
  EXPECT_STREQ(failure_reason(Outcome::kDeadlineExceeded), "REJECTED");
  EXPECT_STREQ(failure_reason(Outcome::kShuttingDown), "REJECTED");
  EXPECT_STREQ(failure_reason(Outcome::kCancelled), "CANCELED");
  EXPECT_STREQ(failure_reason(Outcome::kError), "BACKEND");
  EXPECT_STREQ(failure_reason(Outcome::kUnknownModel), "OTHER");
}

TEST(Metrics, CountsRequestsAndBatchesUnderTritonNames) {
  ServeMetrics metrics;
  ModelMetrics& m = metrics.add_model("tiny", "1");
  const std::map<std::string, std::string> labels = {{"model", "tiny"}, {"version", "1"}};

  // Every series exists from the start, at 0.
  std::string text = metrics.render();
  EXPECT_EQ(metric_value(text, "nv_inference_request_success", labels), 0.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "BACKEND"}}), 0.0);

  TranscriptionResponse ok;
  ok.durations.queue_ms = 2;
  ok.durations.compute_ms = 10;
  m.request_completed(ok, 15000, 1.5);
  m.request_completed(ok, 15000, 2.5);
  TranscriptionResponse failed;
  for (Outcome o : {Outcome::kQueueFull, Outcome::kDeadlineExceeded, Outcome::kCancelled, Outcome::kError}) {
    failed.outcome = o;
    m.request_completed(failed, 1, 1);
  }
  StageDurations d;
  d.features_ms = 1;
  d.encoder_ms = 6;
  d.decoder_ms = 2;
  d.detokenize_ms = 0.5;
  m.batch_executed(2, 0.1, d);
  m.set_pending(3);

  text = metrics.render();
  EXPECT_EQ(metric_value(text, "nv_inference_request_success", labels), 2.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "REJECTED"}}), 2.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "CANCELED"}}), 1.0);
  EXPECT_EQ(metric_value(text, "nv_inference_request_failure", {{"model", "tiny"}, {"reason", "BACKEND"}}), 1.0);
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
  ServeMetrics metrics;
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
}

}  // namespace
}  // namespace steno::serve
