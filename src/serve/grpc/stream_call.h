// One ModelStreamInfer stream, Triton's streaming RPC: the client writes ModelInferRequests on it; each is
// submitted as a ModelInfer call's would be, and its answer is written back as a ModelStreamInferResponse as soon as
// it is made -- in the order requests finish, each response naming its request's model and id. A failed request
// is answered with error_message; the stream goes on. A transcription request with the parameter `stream` true
// also gets its words as they are made: responses whose `text` output holds the next stretch of the transcript.
// Every response carries the parameter triton_final_response (as Triton's decoupled models): false for those
// stretches, true for the request's last response (its answer, the same outputs as ModelInfer's).
//
// Flow: at most kMaxInFlight requests of a stream are in the core at once; the stream reads no further request
// until one finishes, so a client that writes faster than the server answers is held back by gRPC's flow control
// instead of queueing work without bound. Responses wait in a queue while one is being written.
// The stream ends (OK) once the client has half-closed it and every request is answered. A cancelled stream (the
// client, or its deadline) or one whose client stops reading cancels every request in flight.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "grpc_context.h"
#include "grpc_service.pb.h"

namespace steno::serve::rpc {

class StreamCall final
    : public ::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse> {
 public:
  static constexpr int kMaxInFlight = 16;

  // Starts the stream; the reactor deletes itself when gRPC is done with it (OnDone).
  static StreamCall* start(std::shared_ptr<GrpcContext> ctx, ::grpc::CallbackServerContext* call);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  struct State;

 private:
  StreamCall() = default;
  void submit_read_request();

  std::shared_ptr<State> state_;  // shared with the decode tasks and the core's callbacks
  inference::ModelInferRequest request_;  // the read in progress
};

}  // namespace steno::serve::rpc
