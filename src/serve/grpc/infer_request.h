// What a ModelInfer call and each request of a ModelStreamInfer stream share: a ModelInferRequest made into the
// core's Submission (model and version checked, id, deadline, fault tag, tensors copied out), its audio and
// parameters read on the work pool, and the core's answer made into a ModelInferResponse or a gRPC status.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "grpc_context.h"
#include "grpc_service.pb.h"
#include "serve/frontend/infer_tensors.h"
#include "steno/serve/service.h"

namespace steno::serve::rpc {

// The metadata keys of service.h's kFaultHeader and kWarningHeader (gRPC metadata keys are lower case).
inline constexpr const char* kFaultHeaderKey = "x-steno-fault";
inline constexpr const char* kWarningHeaderKey = "x-steno-warning";

struct InferSubmission {
  Submission submission;  // refused already when the tensors are malformed (counted as the model's failure)
  InferRequestBody body;  // the tensors, copied: the message may be reused after
};

// A request for a served model and version, as a submission with `cancelled` as its flag; NOT_FOUND (not counted
// anywhere: no model to count it for) for an unknown model or version.
std::variant<InferSubmission, ::grpc::Status> infer_submission(GrpcContext& ctx,
                                                               const ::grpc::CallbackServerContext& call,
                                                               const inference::ModelInferRequest& request,
                                                               std::shared_ptr<std::atomic<bool>> cancelled);

// On the work pool, just before the submission: the audio and parameters read from `body` into `s` (a bad one
// refuses it; a cancelled call is refused as such); what the answer is to hold.
std::vector<RequestedOutput> read_inference(const InferRequestBody& body, Submission& s, bool cancelled);

// The answer of a request: OK with `response` filled (outputs as asked, the client's id echoed), or the status of
// its failure.
::grpc::Status infer_answer(const TranscriptionResponse& r, const std::vector<RequestedOutput>& outputs,
                            const std::string& client_id, const std::string& task,
                            inference::ModelInferResponse* response);

void log_failure(const std::string& id, const std::string& model, const ::grpc::Status& status);

}  // namespace steno::serve::rpc
