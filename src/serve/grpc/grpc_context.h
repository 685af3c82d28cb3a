// What the RPC handlers share: the options, the service and the submission pool. Held by shared_ptr
// and captured by the core's `done` callbacks, so that a late answer never touches a destroyed server.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "serve/work_pool.h"
#include "serve/grpc/server.h"

namespace steno::serve::rpc {

struct GrpcContext {
  GrpcContext(GrpcServerOptions o, TranscriptionService& s) : options(std::move(o)), service(s) {}

  GrpcServerOptions options;
  TranscriptionService& service;
  // The submission pool (the service decodes the audio on it), owned by the server; set while it runs. Tasks posted to it may outlive the RPC (a cancelled
  // call finishes at once), never the pool: the server destroys it only after gRPC has shut down, and its
  // destructor runs what is queued.
  WorkPool* pool = nullptr;
  std::atomic<uint64_t> next_id{1};

  // "grpc-42": the request's id in the core's logs (the client's ModelInferRequest.id is only echoed back).
  std::string new_request_id() { return "grpc-" + std::to_string(next_id++); }
};

}  // namespace steno::serve::rpc
