#include "stream_call.h"

#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "infer_request.h"
#include "status.h"
#include "tensor_codec.h"

namespace steno::serve::rpc {

using ::grpc::Status;
using ::grpc::StatusCode;
using Flag = std::shared_ptr<std::atomic<bool>>;

namespace {

constexpr const char* kFinalParameter = "triton_final_response";
constexpr const char* kStreamParameter = "stream";

void mark_final(inference::ModelStreamInferResponse& r, bool final) {
  (*r.mutable_infer_response()->mutable_parameters())[kFinalParameter].set_bool_param(final);
}

// A request's failure, as Triton writes one on a stream: the message, and the request's model and id.
inference::ModelStreamInferResponse failure(const Status& status, const std::string& model,
                                            const std::string& client_id) {
  inference::ModelStreamInferResponse r;
  r.set_error_message(status.error_message());
  r.mutable_infer_response()->set_model_name(model);
  r.mutable_infer_response()->set_id(client_id);
  mark_final(r, true);
  return r;
}

// The request's `stream` parameter: false when absent; nullopt when it is not a boolean.
std::optional<bool> stream_parameter(const inference::ModelInferRequest& request) {
  const auto p = request.parameters().find(kStreamParameter);
  if (p == request.parameters().end()) return false;
  if (p->second.parameter_choice_case() != inference::InferParameter::kBoolParam) return std::nullopt;
  return p->second.bool_param();
}

}  // namespace

// What outlives the reactor: the decode tasks and the core's callbacks hold it. The reactor is touched only under
// `mu` and never once `done` (OnDone has run and deleted it). `mu` is recursive because gRPC may run a reaction
// inline, on the thread of the Start* or Finish call that completed it (an operation that completes at once): the
// state is consistent before every such call, and a reactor method holds its own reference to the state, since
// OnDone may delete the reactor (and its state_ member) inside a Finish it calls.
struct StreamCall::State {
  std::shared_ptr<GrpcContext> ctx;
  ::grpc::CallbackServerContext* call = nullptr;
  StreamCall* reactor = nullptr;
  std::recursive_mutex mu;
  std::deque<inference::ModelStreamInferResponse> to_write;  // its front is being written while `writing`
  bool writing = false, reads_done = false, read_paused = false, finished = false, done = false;
  int in_flight = 0;
  std::set<Flag> active;  // the cancellation flags of the requests in flight

  // Queues `r` for writing; `last` ends its request (`flag`'s).
  void send(inference::ModelStreamInferResponse r, const Flag& flag, bool last) {
    std::lock_guard<std::recursive_mutex> lock(mu);
    if (last) {
      active.erase(flag);
      --in_flight;
    }
    if (done || finished) return;
    to_write.push_back(std::move(r));
    if (!writing) write_next();                 // (its completion may have run inline, even finished the stream)
    if (last && read_paused && !reads_done && !finished && !done) {  // room for the next request again
      read_paused = false;
      reactor->StartRead(&reactor->request_);
    }
  }

  void write_next() {  // under mu, with a response queued and none being written
    writing = true;
    reactor->StartWrite(&to_write.front());
  }

  void finish(Status status) {  // under mu
    if (finished || done) return;
    finished = true;
    reactor->Finish(std::move(status));
  }

  void finish_when_all_answered() {  // under mu
    if (reads_done && in_flight == 0 && to_write.empty() && !writing) finish(Status::OK);
  }

  void cancel_all() {  // under mu
    for (const Flag& f : active) f->store(true);
  }
};

StreamCall* StreamCall::start(std::shared_ptr<GrpcContext> ctx, ::grpc::CallbackServerContext* call) {
  auto* self = new StreamCall();
  self->state_ = std::make_shared<State>();
  self->state_->ctx = std::move(ctx);
  self->state_->call = call;
  self->state_->reactor = self;
  if (auto denied = check_api_key(*call, self->state_->ctx->options.api_key)) {
    std::lock_guard<std::recursive_mutex> lock(self->state_->mu);
    self->state_->finish(*denied);
    return self;
  }
  self->StartRead(&self->request_);
  return self;
}

void StreamCall::OnReadDone(bool ok) {
  const std::shared_ptr<State> state = state_;
  if (!ok) {  // the client has half-closed the stream (or it is over)
    std::lock_guard<std::recursive_mutex> lock(state->mu);
    state->reads_done = true;
    state->finish_when_all_answered();
    return;
  }
  submit_read_request();
  std::lock_guard<std::recursive_mutex> lock(state->mu);
  if (state->finished || state->done) return;
  if (state->in_flight >= kMaxInFlight)
    state->read_paused = true;  // send() reads on once a request is answered
  else
    StartRead(&request_);
}

// The request just read, checked, then on the work pool: decoded and submitted, its words and answer sent back.
void StreamCall::submit_read_request() {
  const std::shared_ptr<State> state = state_;
  const Flag flag = std::make_shared<std::atomic<bool>>(false);
  {
    std::lock_guard<std::recursive_mutex> lock(state->mu);
    ++state->in_flight;
    state->active.insert(flag);
  }
  auto made = infer_submission(*state->ctx, *state->call, request_, flag);
  if (const auto* missing = std::get_if<Status>(&made))
    return state->send(failure(*missing, request_.model_name(), request_.id()), flag, true);
  InferSubmission& submission = std::get<InferSubmission>(made);
  const std::optional<bool> stream_words = stream_parameter(request_);
  if (!stream_words || (*stream_words && submission.submission.task != "transcription")) {
    const Status bad(StatusCode::INVALID_ARGUMENT,
                     !stream_words ? "parameter 'stream' must be true or false"
                                   : "parameter 'stream' is for transcription models: a diarization has no words");
    return state->send(failure(bad, submission.submission.model, request_.id()), flag, true);
  }
  state->ctx->pool->post([state, flag, stream = *stream_words, client_id = request_.id(),
                          made = std::move(submission)]() mutable {
    Submission& s = made.submission;
    // The audio is a view into made.body, alive until submit returns.
    std::vector<RequestedOutput> outputs = read_inference(made.body, s, flag->load());
    if (stream)
      s.on_words = [state, flag, model = s.model, client_id](const asr::Transcript& next) {
        inference::ModelStreamInferResponse r;
        fill_infer_response(model, client_id, {OutputTensor{"text", "BYTES", {1}, {next.text}, {}}},
                            r.mutable_infer_response());
        mark_final(r, false);
        state->send(std::move(r), flag, false);
      };
    AnswerFn answer = [state, flag, outputs = std::move(outputs), client_id, model = s.model, task = s.task,
                       id = s.id](TranscriptionResponse r) {
      inference::ModelStreamInferResponse out;
      const Status status = infer_answer(r, outputs, client_id, task, out.mutable_infer_response());
      if (status.ok()) {
        mark_final(out, true);
      } else {
        log_failure(id, model, status);
        out = failure(status, model, client_id);  // final too
      }
      state->send(std::move(out), flag, true);
    };
    state->ctx->service.submit(std::move(s), std::move(answer));
  });
}

void StreamCall::OnWriteDone(bool ok) {
  const std::shared_ptr<State> state = state_;
  std::lock_guard<std::recursive_mutex> lock(state->mu);
  state->writing = false;
  state->to_write.pop_front();
  if (!ok) {  // the client is gone or stopped reading: nothing more reaches it
    state->cancel_all();
    state->finish(Status(StatusCode::CANCELLED, "the stream's client stopped reading"));
    return;
  }
  if (!state->to_write.empty())
    state->write_next();
  else
    state->finish_when_all_answered();
}

void StreamCall::OnCancel() {
  const std::shared_ptr<State> state = state_;
  std::lock_guard<std::recursive_mutex> lock(state->mu);
  state->cancel_all();
  state->finish(Status(StatusCode::CANCELLED, "the stream was cancelled (by the client, or its deadline passed)"));
}

void StreamCall::OnDone() {
  const std::shared_ptr<State> state = state_;
  {
    std::lock_guard<std::recursive_mutex> lock(state->mu);
    state->done = true;
    state->cancel_all();
  }
  delete this;
}

}  // namespace steno::serve::rpc
