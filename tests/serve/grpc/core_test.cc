// The gRPC front end over the real InferenceCore (real batcher, real lanes, real metrics) with a stand-in runner
// that the test holds: a full queue is RESOURCE_EXHAUSTED with the batcher's retry hint, a deadline that passes in
// the queue drops the request before it runs, and the core's Prometheus counters count gRPC calls as they count
// HTTP ones.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>

#include "../metrics_text.h"
#include "core_server.h"
#include "grpc_test_util.h"
#include "serve/inference_core.h"

namespace steno::testing {
namespace {

using ::grpc::ClientContext;
using ::grpc::StatusCode;
using namespace std::chrono_literals;
using serve::testing::metric_value;

// A runner that blocks every batch until the test opens the gate, and counts the clips it ran.
class Gate {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  bool wait_running(int n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return running_ >= n; });
  }
  int ran() {
    std::lock_guard lock(mu_);
    return ran_;
  }
  std::vector<asr::Transcript> run(size_t clips) {
    std::unique_lock lock(mu_);
    ++running_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    ran_ += static_cast<int>(clips);
    asr::Transcript t;
    t.text = "gated";
    return std::vector<asr::Transcript>(clips, t);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int running_ = 0, ran_ = 0;
};

class GateRunner final : public serve::BatchRunner {
 public:
  explicit GateRunner(Gate& gate) : gate_(gate) {}
  serve::BatchOutput run(const std::vector<std::span<const float>>& clips, asr::StageTimings*) override {
    return gate_.run(clips.size());
  }

 private:
  Gate& gate_;
};

class GrpcOverTheCore : public ::testing::Test {
 protected:
  GrpcOverTheCore() {
    serve::ModelSpec spec = core_test_model([this](int) { return std::make_unique<GateRunner>(gate_); });
    spec.batcher.max_batch_size = 1;
    spec.batcher.max_queue_delay = 0us;
    spec.batcher.max_queue_size = 1;
    core_ = std::make_unique<serve::InferenceCore>(std::vector<serve::ModelSpec>{spec});
    server_ = std::make_unique<GrpcTestServer>(*core_);
    stub_ = server_->stub();
  }
  ~GrpcOverTheCore() override {
    gate_.open();
    server_.reset();
    core_.reset();
  }

  // A ModelInfer call on its own thread, with a deadline.
  std::future<::grpc::Status> call(std::chrono::milliseconds timeout = 60s, ClientContext* context = nullptr) {
    return std::async(std::launch::async, [this, timeout, context] {
      ClientContext local;
      ClientContext& c = context ? *context : local;
      prepare(c, timeout);
      inference::ModelInferResponse r;
      const ::grpc::Status st = stub_->ModelInfer(&c, fp32_request(std::vector<float>(1600, 0.1f), 16000), &r);
      if (st.ok()) {
        EXPECT_EQ(outputs_of(r)["text"].bytes, std::vector<std::string>{"gated"});
      }
      return st;
    });
  }
  double metric(const std::string& name, std::map<std::string, std::string> labels = {}) {
    labels["model"] = FakeService::kModel;
    return metric_value(core_->render_metrics(), name, labels).value_or(-1);
  }
  bool wait_pending(double n) {
    for (int i = 0; i < 500; ++i) {
      if (metric("nv_inference_pending_request_count") == n) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  Gate gate_;
  std::unique_ptr<serve::InferenceCore> core_;
  std::unique_ptr<GrpcTestServer> server_;
  std::unique_ptr<Stub> stub_;
};

TEST_F(GrpcOverTheCore, AFullQueueIsResourceExhaustedWithARetryHint) {
  auto running = call();
  ASSERT_TRUE(gate_.wait_running(1, 10s));
  auto queued = call();
  ASSERT_TRUE(wait_pending(1));
  ClientContext c;
  prepare(c);
  inference::ModelInferResponse r;
  const ::grpc::Status full = stub_->ModelInfer(&c, fp32_request(std::vector<float>(1600), 16000), &r);
  EXPECT_EQ(full.error_code(), StatusCode::RESOURCE_EXHAUSTED) << full.error_message();
  EXPECT_NE(full.error_message().find("retry after"), std::string::npos) << full.error_message();
  EXPECT_FALSE(trailer(c, "retry-after").empty());
  EXPECT_GE(std::stoi(trailer(c, "retry-after")), 1);

  gate_.open();
  EXPECT_TRUE(running.get().ok());
  EXPECT_TRUE(queued.get().ok());
  EXPECT_EQ(gate_.ran(), 2);
  EXPECT_EQ(metric("nv_inference_request_success"), 2);
  EXPECT_EQ(metric("nv_inference_request_failure", {{"reason", "REJECTED"}}), 1);
}

TEST_F(GrpcOverTheCore, ADeadlineThatPassesInTheQueueDropsTheRequest) {
  auto running = call();
  ASSERT_TRUE(gate_.wait_running(1, 10s));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(call(300ms).get().error_code(), StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_TRUE(wait_pending(0));  // it left the queue without running
  gate_.open();
  EXPECT_TRUE(running.get().ok());
  EXPECT_EQ(gate_.ran(), 1);  // the expired request never ran
  EXPECT_EQ(metric("nv_inference_request_success"), 1);
  // Expired in the queue (REJECTED) or flagged by gRPC's cancellation first (CANCELED): either way, dropped.
  EXPECT_EQ(metric("nv_inference_request_failure", {{"reason", "REJECTED"}}) +
                metric("nv_inference_request_failure", {{"reason", "CANCELED"}}),
            1);
}

TEST_F(GrpcOverTheCore, AClientCancelDropsTheQueuedRequest) {
  auto running = call();
  ASSERT_TRUE(gate_.wait_running(1, 10s));
  ClientContext c;
  auto cancelled = call(60s, &c);
  ASSERT_TRUE(wait_pending(1));
  c.TryCancel();
  EXPECT_EQ(cancelled.get().error_code(), StatusCode::CANCELLED);
  ASSERT_TRUE(wait_pending(0));  // the batcher dropped it
  gate_.open();
  EXPECT_TRUE(running.get().ok());
  EXPECT_EQ(gate_.ran(), 1);
  EXPECT_EQ(metric("nv_inference_request_failure", {{"reason", "CANCELED"}}), 1);
}

}  // namespace
}  // namespace steno::testing
