#include "infer_call.h"

#include <atomic>
#include <functional>

#include "infer_request.h"
#include "status.h"

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

  // Finishes the call once, with the status `make` returns; `make` writes the response or trailing metadata, and
  // runs only for the caller that wins. Returns false, touching nothing, when the call was already finished (the
  // reactor may then be gone).
  bool finish(const std::function<Status()>& make) {
    if (finished.exchange(true)) return false;
    reactor->Finish(make());
    return true;
  }
  bool finish(Status status) {
    return finish([&] { return status; });
  }
};

namespace {

// On the work pool: hand the request to the service (which decodes its audio here), and finish the call from its
// answer.
void submit(const std::shared_ptr<GrpcContext>& ctx, const std::shared_ptr<InferCall::CallState>& state,
            InferRequestBody body, Submission submission) {
  // OnCancel may have finished the call already: then nothing is decoded. The audio is a view into `body`, alive
  // until submit returns.
  std::vector<RequestedOutput> outputs = read_inference(body, submission, state->cancelled->load());
  AnswerFn answer = [state, client_id = body.id.value_or(""), outputs = std::move(outputs),
                     id = submission.id, task = submission.task](TranscriptionResponse r) {
    const auto add_warnings = [&] {
      for (const std::string& w : r.warnings) state->call->AddTrailingMetadata(kWarningHeaderKey, w);
    };
    if (!r.ok()) {
      const ServeError e = r.error();
      const Status status = grpc_status(e);
      log_failure(id, r.model, status);
      state->finish([&] {
        if (const long after = retry_after_seconds(e); after > 0)
          state->call->AddTrailingMetadata(kRetryAfterKey, std::to_string(after));
        return status;
      });
      return;
    }
    state->finish([&] {
      add_warnings();
      return infer_answer(r, outputs, client_id, task, state->response);  // INTERNAL if the response cannot be built
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
  if (auto denied = check_api_key(*state_->call, ctx->options.api_key)) {
    state_->finish(*denied);
    return;
  }
  auto made = infer_submission(*ctx, *state_->call, request, state_->cancelled);
  if (const auto* missing = std::get_if<Status>(&made)) {
    state_->finish(*missing);
    return;
  }
  ctx->pool->post([ctx, state = state_, made = std::move(std::get<InferSubmission>(made))]() mutable {
    submit(ctx, state, std::move(made.body), std::move(made.submission));
  });
}

void InferCall::OnCancel() {
  state_->cancelled->store(true);
  state_->finish(Status(StatusCode::CANCELLED, "the call was cancelled (by the client, or its deadline passed)"));
}

}  // namespace steno::serve::rpc
