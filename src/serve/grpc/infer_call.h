// One ModelInfer call: a unary reactor that checks the call (API key, model, version), copies the request's
// tensors out of the message, decodes the audio on the work pool, submits the request to the inference core and
// finishes the call from the core's `done` callback. No thread waits while the request is queued.
//
// Cancellation: when the client cancels or its deadline passes, gRPC calls OnCancel, which sets the request's
// `cancelled` flag (the core then drops the work, queued or not yet submitted) and finishes the call at once;
// the core's later answer only updates the statistics. Whichever of the core's callback and OnCancel comes first
// finishes the call; the other leaves it alone (CallState::finish).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "grpc_context.h"
#include "grpc_service.pb.h"

namespace steno::serve::rpc {

class InferCall final : public ::grpc::ServerUnaryReactor {
 public:
  // Starts the call; the reactor deletes itself when gRPC is done with it (OnDone).
  static ::grpc::ServerUnaryReactor* start(std::shared_ptr<GrpcContext> ctx, ::grpc::CallbackServerContext* call,
                                           const inference::ModelInferRequest* request,
                                           inference::ModelInferResponse* response);

  void OnCancel() override;
  void OnDone() override { delete this; }

  struct CallState;

 private:
  InferCall(::grpc::CallbackServerContext* call, inference::ModelInferResponse* response);
  void begin(std::shared_ptr<GrpcContext> ctx, const inference::ModelInferRequest& request);

  std::shared_ptr<CallState> state_;  // shared with the decode task and the core's callback
};

}  // namespace steno::serve::rpc
