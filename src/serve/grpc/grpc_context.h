// What the RPC handlers share: the options, the service, the statistics and the decode pool. Held by shared_ptr
// and captured by the core's `done` callbacks, so that a late answer never touches a destroyed server.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "steno/serve/frontend/model_stats.h"
#include "steno/serve/frontend/work_pool.h"
#include "steno/serve/grpc/server.h"

namespace steno::serve::rpc {

struct GrpcContext {
  GrpcContext(GrpcServerOptions o, TranscriptionService& s)
      : options(std::move(o)), service(s), stats(options.stats ? options.stats : std::make_shared<ModelStats>()) {}

  GrpcServerOptions options;
  TranscriptionService& service;
  std::shared_ptr<ModelStats> stats;
  // The decode pool, owned by the server; set while it runs. Tasks posted to it may outlive the RPC (a cancelled
  // call finishes at once), never the pool: the server destroys it only after gRPC has shut down, and its
  // destructor runs what is queued.
  WorkPool* pool = nullptr;
  std::atomic<uint64_t> next_id{1};

  bool serves(std::string_view model) const {
    for (const auto& m : service.models())
      if (m == model) return true;
    return false;
  }
  // "grpc-42": the request's id in the core's logs (the client's ModelInferRequest.id is only echoed back).
  std::string new_request_id() { return "grpc-" + std::to_string(next_id++); }
};

}  // namespace steno::serve::rpc
