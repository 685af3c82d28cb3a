// inference.GRPCInferenceService on gRPC's callback API: the health, metadata and statistics RPCs answered inline,
// ModelInfer handed to an InferCall (infer_call.h), ModelStreamInfer to a StreamCall (stream_call.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "grpc_context.h"
#include "grpc_service.grpc.pb.h"

namespace steno::serve::rpc {

class KServeService final : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit KServeService(std::shared_ptr<GrpcContext> ctx) : ctx_(std::move(ctx)) {}

  ::grpc::ServerUnaryReactor* ServerLive(::grpc::CallbackServerContext* call, const inference::ServerLiveRequest*,
                                         inference::ServerLiveResponse* response) override;
  ::grpc::ServerUnaryReactor* ServerReady(::grpc::CallbackServerContext* call, const inference::ServerReadyRequest*,
                                          inference::ServerReadyResponse* response) override;
  ::grpc::ServerUnaryReactor* ModelReady(::grpc::CallbackServerContext* call,
                                         const inference::ModelReadyRequest* request,
                                         inference::ModelReadyResponse* response) override;
  ::grpc::ServerUnaryReactor* ServerMetadata(::grpc::CallbackServerContext* call,
                                             const inference::ServerMetadataRequest*,
                                             inference::ServerMetadataResponse* response) override;
  ::grpc::ServerUnaryReactor* ModelMetadata(::grpc::CallbackServerContext* call,
                                            const inference::ModelMetadataRequest* request,
                                            inference::ModelMetadataResponse* response) override;
  ::grpc::ServerUnaryReactor* ModelInfer(::grpc::CallbackServerContext* call,
                                         const inference::ModelInferRequest* request,
                                         inference::ModelInferResponse* response) override;
  ::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>* ModelStreamInfer(
      ::grpc::CallbackServerContext* call) override;
  ::grpc::ServerUnaryReactor* ModelStatistics(::grpc::CallbackServerContext* call,
                                              const inference::ModelStatisticsRequest* request,
                                              inference::ModelStatisticsResponse* response) override;

 private:
  // The model `name` (a served name or an alias) means, or NOT_FOUND unless it is served and `version` names its
  // version ("" or "1").
  std::variant<ModelInfo, ::grpc::Status> find_model(const std::string& name, const std::string& version) const;

  std::shared_ptr<GrpcContext> ctx_;
};

}  // namespace steno::serve::rpc
