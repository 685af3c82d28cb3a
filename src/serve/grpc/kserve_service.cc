#include "kserve_service.h"

#include <fmt/format.h>

#include "infer_call.h"
#include "stream_call.h"
#include "status.h"
#include "serve/frontend/kserve_model.h"
#include "tensor_codec.h"

namespace steno::serve::rpc {
namespace {

using ::grpc::Status;
using ::grpc::StatusCode;

// The extensions served over gRPC (binary_tensor_data and model_configuration are HTTP's only).
const char* const kExtensions[] = {"statistics", "schedule_policy"};

::grpc::ServerUnaryReactor* finish(::grpc::CallbackServerContext* call, Status status) {
  ::grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

}  // namespace

std::variant<ModelInfo, Status> KServeService::find_model(const std::string& name, const std::string& version) const {
  try {
    ModelInfo model = resolve_model(ctx_->service, name, false);
    if (!is_served_version(version))
      return Status(StatusCode::NOT_FOUND, fmt::format("model '{}' has no version '{}' (steno serves version 1)",
                                                       model.name, version.substr(0, 64)));
    return model;
  } catch (const ServeError& e) {
    return grpc_status(e);
  }
}

// The health probes need no API key, as /v2/health/* over HTTP: load balancers call them without credentials.
::grpc::ServerUnaryReactor* KServeService::ServerLive(::grpc::CallbackServerContext* call,
                                                      const inference::ServerLiveRequest*,
                                                      inference::ServerLiveResponse* response) {
  response->set_live(ctx_->service.live());
  return finish(call, Status::OK);
}

::grpc::ServerUnaryReactor* KServeService::ServerReady(::grpc::CallbackServerContext* call,
                                                       const inference::ServerReadyRequest*,
                                                       inference::ServerReadyResponse* response) {
  response->set_ready(ctx_->service.ready());
  return finish(call, Status::OK);
}

::grpc::ServerUnaryReactor* KServeService::ModelReady(::grpc::CallbackServerContext* call,
                                                      const inference::ModelReadyRequest* request,
                                                      inference::ModelReadyResponse* response) {
  if (auto denied = check_api_key(*call, ctx_->options.api_key)) return finish(call, *denied);
  const auto model = find_model(request->name(), request->version());
  if (const auto* missing = std::get_if<Status>(&model)) return finish(call, *missing);
  response->set_ready(ctx_->service.ready());
  return finish(call, Status::OK);
}

::grpc::ServerUnaryReactor* KServeService::ServerMetadata(::grpc::CallbackServerContext* call,
                                                          const inference::ServerMetadataRequest*,
                                                          inference::ServerMetadataResponse* response) {
  if (auto denied = check_api_key(*call, ctx_->options.api_key)) return finish(call, *denied);
  response->set_name(ctx_->options.server_name);
  response->set_version(ctx_->options.server_version);
  for (const char* e : kExtensions) response->add_extensions(e);
  return finish(call, Status::OK);
}

::grpc::ServerUnaryReactor* KServeService::ModelMetadata(::grpc::CallbackServerContext* call,
                                                         const inference::ModelMetadataRequest* request,
                                                         inference::ModelMetadataResponse* response) {
  if (auto denied = check_api_key(*call, ctx_->options.api_key)) return finish(call, *denied);
  const auto model = find_model(request->name(), request->version());
  if (const auto* missing = std::get_if<Status>(&model)) return finish(call, *missing);
  const ModelInfo& found = std::get<ModelInfo>(model);
  fill_model_metadata(kserve_model_metadata(found.name, found.task), response);
  return finish(call, Status::OK);
}

::grpc::ServerUnaryReactor* KServeService::ModelInfer(::grpc::CallbackServerContext* call,
                                                      const inference::ModelInferRequest* request,
                                                      inference::ModelInferResponse* response) {
  return InferCall::start(ctx_, call, request, response);
}

::grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
KServeService::ModelStreamInfer(::grpc::CallbackServerContext* call) {
  return StreamCall::start(ctx_, call);
}

// An empty name asks for every model (the version is then ignored), as in Triton.
::grpc::ServerUnaryReactor* KServeService::ModelStatistics(::grpc::CallbackServerContext* call,
                                                           const inference::ModelStatisticsRequest* request,
                                                           inference::ModelStatisticsResponse* response) {
  if (auto denied = check_api_key(*call, ctx_->options.api_key)) return finish(call, *denied);
  std::vector<std::string> models;
  if (request->name().empty()) {
    for (const ModelInfo& m : ctx_->service.models()) models.push_back(m.name);
  } else {
    const auto model = find_model(request->name(), request->version());
    if (const auto* missing = std::get_if<Status>(&model)) return finish(call, *missing);
    models = {std::get<ModelInfo>(model).name};
  }
  fill_model_statistics(ctx_->service.statistics(models), response);
  return finish(call, Status::OK);
}

}  // namespace steno::serve::rpc
