#include "serve_load_grpc.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstring>
#include <string_view>
#include <thread>

#include "grpc_service.grpc.pb.h"

namespace serve_load {

namespace {

using Stub = inference::GRPCInferenceService::Stub;

std::string target(const Options& o) { return o.host + ":" + std::to_string(o.grpc_port); }

// Its own connection: a channel with a local subchannel pool shares no connection with the others.
std::unique_ptr<Stub> new_stub(const Options& o) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  return inference::GRPCInferenceService::NewStub(
      grpc::CreateCustomChannel(target(o), grpc::InsecureChannelCredentials(), args));
}

inference::ModelInferRequest infer_request(const Options& o, const std::string& clip_bytes) {
  inference::ModelInferRequest r;
  r.set_model_name(o.model);
  auto* in = r.add_inputs();
  in->set_name("audio");
  in->set_datatype("BYTES");
  in->add_shape(1);
  const uint32_t len = static_cast<uint32_t>(clip_bytes.size());  // the binary form: 4-byte length + bytes
  r.add_raw_input_contents(std::string(reinterpret_cast<const char*>(&len), 4) + clip_bytes);
  auto* out = r.add_outputs();
  out->set_name("text");
  return r;
}

// The output `text` (BYTES [1]) of a response, raw or in contents; nullopt-like "" with ok = false when absent.
bool text_of(const inference::ModelInferResponse& r, std::string& text) {
  for (int i = 0; i < r.outputs_size(); ++i) {
    const auto& t = r.outputs(i);
    if (t.name() != "text" || t.datatype() != "BYTES") continue;
    if (t.contents().bytes_contents_size() > 0) {
      text = t.contents().bytes_contents(0);
      return true;
    }
    if (i >= r.raw_output_contents_size()) return false;
    std::string_view data = r.raw_output_contents(i);
    uint32_t len = 0;
    if (data.size() < 4) return false;
    std::memcpy(&len, data.data(), 4);
    if (len > data.size() - 4) return false;
    text.assign(data.substr(4, len));
    return true;
  }
  return false;
}

// One ModelInfer call: the verdict as the HTTP loop's (ok, wrong text, or failed with a reason).
Verdict infer(Stub& stub, const inference::ModelInferRequest& req, const Options& o, const std::string& expected,
              int& status_code) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000)));
  inference::ModelInferResponse resp;
  const grpc::Status st = stub.ModelInfer(&ctx, req, &resp);
  status_code = static_cast<int>(st.error_code());
  Verdict v;
  if (!st.ok()) {
    v.reason = "grpc " + std::to_string(status_code);
    return v;
  }
  std::string text;
  if (!text_of(resp, text)) {
    v.reason = "no text output";
    return v;
  }
  v.got = text;
  v.ok = expected.empty() || text == expected;
  v.wrong_text = !v.ok;
  return v;
}

}  // namespace

struct GrpcClosedLoopPoint::Impl {
  inference::ModelInferRequest request;
};

bool grpc_available() { return true; }

GrpcClosedLoopPoint::GrpcClosedLoopPoint(const Options& o, const std::string& clip_bytes,
                                         const std::string& reference, const tcp::endpoint& http_ep, int concurrency)
    : o_(o), reference_(reference), concurrency_(concurrency), impl_(std::make_unique<Impl>()),
      window_(ioc_, http_ep, o) {
  impl_->request = infer_request(o, clip_bytes);
}

GrpcClosedLoopPoint::~GrpcClosedLoopPoint() = default;

GrpcReference GrpcClosedLoopPoint::reference(const Options& o, const std::string& clip_bytes) {
  GrpcReference ref;
  const auto stub = new_stub(o);
  const auto start = Clock::now();
  int code = 0;
  const Verdict v = infer(*stub, infer_request(o, clip_bytes), o, "", code);
  ref.latency_ms = ms_between(start, Clock::now());
  ref.ok = v.ok && !v.got.empty();
  ref.text = v.got;
  if (!ref.ok) ref.error = v.ok ? "the answer's text is empty" : v.reason;
  return ref;
}

void GrpcClosedLoopPoint::run() {
  window_.start([this] { stopping_ = true; });  // the threads stop sending once the window closed
  std::thread timers([this] { ioc_.run(); });   // the window's timers and its /metrics scrapes
  std::vector<std::thread> threads;
  for (int c = 0; c < concurrency_; ++c) threads.emplace_back([this, c] { loop(c); });
  for (auto& t : threads) t.join();
  timers.join();
  window_.finish();
}

void GrpcClosedLoopPoint::loop(int conn) {
  const auto stub = new_stub(o_);
  while (!stopping_) {
    const auto sent = Clock::now();
    int code = 0;
    const Verdict v = infer(*stub, impl_->request, o_, reference_, code);
    const auto now = Clock::now();
    ClosedOutcome out;
    out.conn = conn;
    out.phase = now < window_.opens() ? Phase::kWarmup : now < window_.closes() ? Phase::kWindow : Phase::kDrain;
    out.sent_ms = ms_between(window_.opens(), sent);
    out.latency_ms = ms_between(sent, now);
    out.take(v.ok || v.wrong_text ? 200 : code, v, o_.accept_differing_text);
    std::lock_guard lock(mu_);
    outcomes_.push_back(std::move(out));
  }
}

}  // namespace serve_load
