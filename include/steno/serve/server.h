// A whole `steno serve` in one object, built from a ServeConfig: the model loaded (or its worker processes, with an
// MPS daemon where asked), the inference core, the HTTP front end and, with a gRPC port, the gRPC one, all over
// the one service. The `steno serve` command is this plus signals; tests and programs that embed steno build the
// same thing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "steno/serve/config.h"
#include "steno/serve/service.h"

namespace steno::serve {

class Server {
 public:
  virtual ~Server() = default;  // stop()s

  // Binds the front ends' ports and starts serving. Throws kUnavailable naming the address it cannot listen on.
  virtual void start() = 0;
  // Both front ends stop taking requests and answer those in flight (up to drain_timeout_s), side by side; then
  // the core finishes anything left and stops its executors. Idempotent.
  virtual void stop() = 0;

  virtual uint16_t http_port() const = 0;  // the bound port (valid after start)
  virtual uint16_t grpc_port() const = 0;  // 0 when gRPC is off
  virtual TranscriptionService& service() = 0;
  // What is served where, in one line: "serving model 'm' (dir) on http://127.0.0.1:8000; 2 lane(s) on cpu ...".
  virtual std::string banner() const = 0;
};

// Validates `config` (validate()), then loads and starts what it describes; nothing listens until start().
// `config.model.dir` must name the model directory. Throws steno::Error: kInvalidArgument for a bad setting,
// kUnavailable for a sharing mode this machine cannot run (mps, green without a GPU), a model that does not load,
// or an executor that does not start; kUnimplemented for --grpc-port in a build without gRPC.
std::unique_ptr<Server> build_server(const ServeConfig& config);

}  // namespace steno::serve
