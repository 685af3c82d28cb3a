// steno's gRPC front end: KServe v2 over gRPC (Triton's `inference.GRPCInferenceService`, proto/grpc_service.proto)
// -- ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata, ModelInfer and ModelStatistics -- over the
// same TranscriptionService as the HTTP front end. This header includes no gRPC header. `steno` opens it as a
// module (module.h), so that only a server asked for a gRPC port maps gRPC's libraries.
//
// A ModelInfer call holds no thread while its request waits in the batcher: the RPC is served by the callback API,
// it is submitted from a small work pool (where the service decodes its audio), and the answer finishes the call. A client that
// cancels, or whose deadline passes, sets the request's `cancelled` flag so that the core drops the work.
// docs/grpc-api.md lists the RPCs and every status they answer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "steno/serve/service.h"

// Namespace `rpc`, not `grpc`: inside steno::serve a `grpc` namespace would hide gRPC's own.
namespace steno::serve::rpc {

struct GrpcServerOptions {
  std::string host = "127.0.0.1";  // loopback by default, as for HTTP (the server's configuration has the API-key rule)
  uint16_t port = 8001;            // Triton's gRPC port; 0 = an ephemeral port (read it back with port())
  int worker_threads = 2;          // threads decoding the audio of ModelInfer requests

  size_t max_message_bytes = size_t{64} << 20;  // larger requests -> RESOURCE_EXHAUSTED (as --max-body-mb for HTTP)

  // When non-empty, every RPC but ServerLive and ServerReady needs metadata `authorization: Bearer <api_key>`
  // (else UNAUTHENTICATED).
  std::string api_key;

  // stop() lets calls in flight finish for this long, then cancels what is left.
  std::chrono::milliseconds drain_timeout{30'000};

  std::string server_name = "steno";
  std::string server_version = "0.1.0";
};

class GrpcServer {
 public:
  // `service` must outlive the server. Nothing is bound until start().
  GrpcServer(GrpcServerOptions options, TranscriptionService& service);
  ~GrpcServer();  // stop()s
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds host:port and starts serving. Throws steno::Error(kUnavailable) naming the address when it cannot listen
  // (port in use, bad host), kInvalidArgument for invalid options.
  void start();

  // The bound port (the real one when options.port was 0). Valid after start().
  uint16_t port() const;

  // Stops taking calls (new ones get UNAVAILABLE), waits up to drain_timeout for the calls in flight to be
  // answered, cancels the rest (their requests are dropped by the core), then returns. Does not drain the service.
  // Idempotent.
  void stop();

  const GrpcServerOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace steno::serve::rpc
