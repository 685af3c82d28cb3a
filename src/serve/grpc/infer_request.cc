#include "infer_request.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "status.h"
#include "steno/core/error.h"
#include "serve/frontend/kserve_model.h"
#include "tensor_codec.h"

namespace steno::serve::rpc {

using ::grpc::Status;
using ::grpc::StatusCode;

namespace {

// The client's gRPC deadline in the core's clock; max() when it set none.
Clock::time_point client_deadline(const ::grpc::CallbackServerContext& call, Clock::time_point now) {
  const auto deadline = call.deadline();
  const auto now_system = std::chrono::system_clock::now();
  if (deadline >= now_system + std::chrono::hours(24 * 365)) return Clock::time_point::max();  // "none": far future
  return now + std::chrono::duration_cast<Clock::duration>(deadline - now_system);
}

}  // namespace

std::variant<InferSubmission, Status> infer_submission(GrpcContext& ctx, const ::grpc::CallbackServerContext& call,
                                                       const inference::ModelInferRequest& request,
                                                       std::shared_ptr<std::atomic<bool>> cancelled) {
  InferSubmission out;
  Submission& submission = out.submission;
  submission.received = Clock::now();
  try {
    const ModelInfo model = resolve_model(ctx.service, request.model_name(), false);
    submission.model = model.name;
    submission.task = model.task;
  } catch (const ServeError& e) {
    return grpc_status(e);
  }
  if (!is_served_version(request.model_version()))
    return Status(StatusCode::NOT_FOUND, fmt::format("model '{}' has no version '{}' (steno serves version 1)",
                                                     submission.model, request.model_version().substr(0, 64)));
  submission.id = ctx.new_request_id();
  submission.audio_field = kAudioInput;
  submission.deadline = client_deadline(call, submission.received);
  submission.cancelled = std::move(cancelled);
  const auto& metadata = call.client_metadata();
  if (const auto fault = metadata.find(kFaultHeaderKey); fault != metadata.end())
    submission.fault.assign(fault->second.data(), fault->second.size());
  try {
    out.body = infer_body_from_proto(request);  // copies the tensors: the message is not touched after this
  } catch (const Error& e) {  // a malformed request of a served model counts as its failure
    submission.refused = serve_error(e);
  }
  return out;
}

std::vector<RequestedOutput> read_inference(const InferRequestBody& body, Submission& submission, bool cancelled) {
  if (cancelled) {  // the call is over: nothing to decode for
    submission.refused = ServeError(Outcome::kCancelled, "the call was cancelled before its audio was decoded");
    return {};
  }
  if (submission.refused) return {};
  try {
    PreparedInference prepared = prepare_inference(body, submission.task);  // its audio is a view into `body`
    if (prepared.diarize) submission.diarizer = "";  // speakers from the first diarizer served
    submission.audio = std::move(prepared.audio);
    submission.priority = prepared.priority;
    if (prepared.timeout) submission.deadline = std::min(submission.deadline, submission.received + *prepared.timeout);
    return std::move(prepared.outputs);
  } catch (const Error& e) {
    submission.refused = serve_error(e);
    return {};
  }
}

Status infer_answer(const TranscriptionResponse& r, const std::vector<RequestedOutput>& outputs,
                    const std::string& client_id, const std::string& task, inference::ModelInferResponse* response) {
  if (!r.ok()) return grpc_status(r.error());
  try {
    fill_infer_response(r.model, client_id,
                        make_outputs(r, outputs, task, client_id.empty() ? std::string("audio") : client_id), response);
  } catch (const std::exception& e) {
    response->Clear();
    return Status(StatusCode::INTERNAL, fmt::format("internal error building the response: {}", e.what()));
  }
  return Status::OK;
}

void log_failure(const std::string& id, const std::string& model, const Status& status) {
  spdlog::info("{} ModelInfer {}: {} {}", id, model, status_code_name(status.error_code()), status.error_message());
}

}  // namespace steno::serve::rpc
