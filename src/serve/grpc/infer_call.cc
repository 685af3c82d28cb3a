#include "infer_call.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <functional>

#include "status.h"
#include "steno/core/error.h"
#include "steno/serve/frontend/kserve_model.h"
#include "tensor_codec.h"

namespace steno::serve::rpc {

using ::grpc::Status;
using ::grpc::StatusCode;

// What outlives the reactor: the decode task and the core's callback hold it, and touch the reactor, the
// response and the server context only through finish(), which at most one caller wins.
struct InferCall::CallState {
  ::grpc::ServerUnaryReactor* reactor;
  ::grpc::CallbackServerContext* call;
  inference::ModelInferResponse* response;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> finished{false};

  // Finishes the call once: `fill` (may be empty) writes the response or trailing metadata first. Returns false,
  // touching nothing, when the call was already finished (the reactor may then be gone).
  bool finish(Status status, const std::function<void()>& fill = {}) {
    if (finished.exchange(true)) return false;
    if (fill) {
      try {
        fill();
      } catch (const std::exception& e) {
        response->Clear();
        status = Status(StatusCode::INTERNAL, fmt::format("internal error building the response: {}", e.what()));
      }
    }
    reactor->Finish(std::move(status));
    return true;
  }
};

namespace {

// The client's gRPC deadline in the core's clock; max() when it set none.
Clock::time_point client_deadline(const ::grpc::CallbackServerContext& call, Clock::time_point now) {
  const auto deadline = call.deadline();
  const auto now_system = std::chrono::system_clock::now();
  if (deadline >= now_system + std::chrono::hours(24 * 365)) return Clock::time_point::max();  // "none": far future
  return now + std::chrono::duration_cast<Clock::duration>(deadline - now_system);
}

void log_failure(const std::string& id, const std::string& model, const Status& status) {
  spdlog::info("{} ModelInfer {}: {} {}", id, model, status_code_name(status.error_code()), status.error_message());
}

// On the work pool: decode and check the audio, then hand the request to the core.
void decode_and_submit(const std::shared_ptr<GrpcContext>& ctx, const std::shared_ptr<InferCall::CallState>& state,
                       InferRequestBody body, std::string model, std::string id, Clock::time_point received,
                       Clock::time_point deadline) {
  if (state->cancelled->load()) {  // OnCancel has finished the call: nothing to decode for
    ctx->stats->record_rejected(model, received);
    return;
  }
  PreparedInference prepared;
  try {
    prepared = prepare_inference(body, ctx->options.max_audio_seconds);
  } catch (const Error& e) {
    ctx->stats->record_rejected(model, received);
    const Status status = status_from_error(e);
    log_failure(id, model, status);
    state->finish(status);
    return;
  }
  const double input_ms = ms_since(received);
  auto req = std::make_unique<TranscriptionRequest>();
  req->id = id;
  req->model = model;
  req->pcm = std::move(prepared.pcm);
  req->priority = prepared.priority;
  req->arrival = received;
  req->deadline = prepared.timeout ? std::min(deadline, received + *prepared.timeout) : deadline;
  req->cancelled = state->cancelled;
  req->done = [ctx, state, model, id, received, input_ms, client_id = body.id.value_or(""),
               outputs = std::move(prepared.outputs)](TranscriptionResponse response) {
    if (response.outcome != Outcome::kOk) {
      ctx->stats->record_answer(model, response, received, input_ms, 0);
      const Rejection r = status_from_outcome(response);
      log_failure(id, model, r.status);
      state->finish(r.status, [&] {
        if (r.retry_after_s > 0) state->call->AddTrailingMetadata(kRetryAfterKey, std::to_string(r.retry_after_s));
      });
      return;
    }
    const auto t0 = Clock::now();
    bool recorded = false;
    state->finish(Status::OK, [&] {
      fill_infer_response(model, client_id, make_outputs(response.transcript, outputs), state->response);
      // Counted before the reply leaves, as over HTTP: a client holding its answer finds it in the statistics.
      ctx->stats->record_answer(model, response, received, input_ms, ms_since(t0));
      recorded = true;
    });
    if (!recorded) ctx->stats->record_answer(model, response, received, input_ms, ms_since(t0));
  };
  ctx->service.submit(std::move(req));
}

}  // namespace

InferCall::InferCall(::grpc::CallbackServerContext* call, inference::ModelInferResponse* response)
    : state_(std::make_shared<CallState>()) {
  state_->reactor = this;
  state_->call = call;
  state_->response = response;
}

::grpc::ServerUnaryReactor* InferCall::start(std::shared_ptr<GrpcContext> ctx, ::grpc::CallbackServerContext* call,
                                              const inference::ModelInferRequest* request,
                                              inference::ModelInferResponse* response) {
  auto* self = new InferCall(call, response);
  self->begin(std::move(ctx), *request);
  return self;
}

void InferCall::begin(std::shared_ptr<GrpcContext> ctx, const inference::ModelInferRequest& request) {
  const auto received = Clock::now();
  if (auto denied = check_api_key(*state_->call, ctx->options.api_key)) {
    state_->finish(*denied);
    return;
  }
  const std::string& model = request.model_name();
  if (!ctx->serves(model)) {
    state_->finish(Status(StatusCode::NOT_FOUND, fmt::format("unknown model '{}'", model.substr(0, 128))));
    return;
  }
  if (!is_served_version(request.model_version())) {
    state_->finish(Status(StatusCode::NOT_FOUND, fmt::format("model '{}' has no version '{}' (steno serves version 1)",
                                                             model, request.model_version().substr(0, 64))));
    return;
  }
  const std::string id = ctx->new_request_id();
  InferRequestBody body;
  try {
    body = infer_body_from_proto(request);  // copies the tensors: the message is not touched after this
  } catch (const Error& e) {
    ctx->stats->record_rejected(model, received);
    const Status status = status_from_error(e);
    log_failure(id, model, status);
    state_->finish(status);
    return;
  }
  ctx->pool->post([ctx, state = state_, body = std::move(body), model, id, received,
                   deadline = client_deadline(*state_->call, received)]() mutable {
    decode_and_submit(ctx, state, std::move(body), std::move(model), std::move(id), received, deadline);
  });
}

void InferCall::OnCancel() {
  state_->cancelled->store(true);
  state_->finish(Status(StatusCode::CANCELLED, "the call was cancelled (by the client, or its deadline passed)"));
}

}  // namespace steno::serve::rpc
