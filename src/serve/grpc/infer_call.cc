#include "infer_call.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <functional>

#include "status.h"
#include "steno/core/error.h"
#include "serve/frontend/kserve_model.h"
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

// The metadata keys of service.h's kFaultHeader and kWarningHeader (gRPC metadata keys are lower case).
constexpr const char* kFaultHeaderKey = "x-steno-fault";
constexpr const char* kWarningHeaderKey = "x-steno-warning";

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

// On the work pool: hand the request to the service (which decodes its audio here), and finish the call from its
// answer.
void submit(const std::shared_ptr<GrpcContext>& ctx, const std::shared_ptr<InferCall::CallState>& state,
            InferRequestBody body, Submission submission) {
  PreparedInference prepared;
  if (state->cancelled->load()) {  // OnCancel has finished the call: nothing to decode for
    submission.refused = ServeError(Outcome::kCancelled, "the call was cancelled before its audio was decoded");
  } else if (!submission.refused) {
    try {
      prepared = prepare_inference(body, submission.task);  // its audio is a view into `body`, alive until submit
      if (prepared.diarize) submission.diarizer = "";          // returns; speakers from the first diarizer served
      submission.audio = std::move(prepared.audio);
      submission.priority = prepared.priority;
      if (prepared.timeout) submission.deadline = std::min(submission.deadline, submission.received + *prepared.timeout);
    } catch (const Error& e) {
      submission.refused = serve_error(e);
    }
  }
  AnswerFn answer = [state, client_id = body.id.value_or(""), outputs = std::move(prepared.outputs),
                     id = submission.id, task = submission.task](TranscriptionResponse r) {
    const auto add_warnings = [&] {
      for (const std::string& w : r.warnings) state->call->AddTrailingMetadata(kWarningHeaderKey, w);
    };
    if (!r.ok()) {
      const ServeError e = r.error();
      const Status status = grpc_status(e);
      log_failure(id, r.model, status);
      state->finish(status, [&] {
        if (const long after = retry_after_seconds(e); after > 0)
          state->call->AddTrailingMetadata(kRetryAfterKey, std::to_string(after));
      });
      return;
    }
    state->finish(Status::OK, [&] {
      add_warnings();
      fill_infer_response(r.model, client_id,
                          make_outputs(r, outputs, task, client_id.empty() ? std::string("audio") : client_id),
                          state->response);
    });
  };
  ctx->service.submit(std::move(submission), std::move(answer));
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
  Submission submission;
  submission.received = Clock::now();
  if (auto denied = check_api_key(*state_->call, ctx->options.api_key)) {
    state_->finish(*denied);
    return;
  }
  try {
    const ModelInfo model = resolve_model(ctx->service, request.model_name(), false);
    submission.model = model.name;
    submission.task = model.task;
  } catch (const ServeError& e) {
    state_->finish(grpc_status(e));
    return;
  }
  if (!is_served_version(request.model_version())) {
    state_->finish(Status(StatusCode::NOT_FOUND, fmt::format("model '{}' has no version '{}' (steno serves version 1)",
                                                             submission.model, request.model_version().substr(0, 64))));
    return;
  }
  submission.id = ctx->new_request_id();
  submission.audio_field = kAudioInput;
  submission.deadline = client_deadline(*state_->call, submission.received);
  submission.cancelled = state_->cancelled;
  const auto& metadata = state_->call->client_metadata();
  if (const auto fault = metadata.find(kFaultHeaderKey); fault != metadata.end())
    submission.fault.assign(fault->second.data(), fault->second.size());
  InferRequestBody body;
  try {
    body = infer_body_from_proto(request);  // copies the tensors: the message is not touched after this
  } catch (const Error& e) {  // a malformed request of a served model counts as its failure
    submission.refused = serve_error(e);
  }
  ctx->pool->post([ctx, state = state_, body = std::move(body), submission = std::move(submission)]() mutable {
    submit(ctx, state, std::move(body), std::move(submission));
  });
}

void InferCall::OnCancel() {
  state_->cancelled->store(true);
  state_->finish(Status(StatusCode::CANCELLED, "the call was cancelled (by the client, or its deadline passed)"));
}

}  // namespace steno::serve::rpc
