// The gRPC front end as a module of its own: libsteno-grpc.so, beside the `steno` executable, opened by the first
// server asked for a gRPC port. Linked into steno, gRPC and its ~45 Abseil libraries were loaded by every steno
// process -- `--help`, `transcribe`, a worker process -- whatever it did; with
// oneDNN, OpenBLAS and libcrypto also opened when first needed, `steno --help` went from 42 to 15 ms on a 2-core
// machine (bench/results/cpu-startup/lazy-libraries.json).
//
// The module holds the front end's own code (steno_grpc's objects, the generated messages, protobuf) and links
// gRPC; the steno code it calls (the service, the front ends' shared parsing, the work pool) it finds in the
// program that opens it, which therefore exports its symbols (CMake ENABLE_EXPORTS on `steno`). A program that
// serves gRPC through build_server must do the same; the gRPC tests link steno_grpc itself instead.
#pragma once

#include <cstdint>
#include <memory>

#include "serve/grpc/server.h"

namespace steno::serve::rpc {

// GrpcServer as the module hands it out: the server that opens the module names no gRPC type.
class GrpcFrontEnd {
 public:
  virtual ~GrpcFrontEnd() = default;  // stop()s
  virtual void start() = 0;           // as GrpcServer::start()
  virtual uint16_t port() const = 0;  // as GrpcServer::port()
  virtual void stop() = 0;            // as GrpcServer::stop()
};

// The module's one exported function (C linkage, so that its name is the plain string below). It never returns
// null; exceptions from the front end's constructor pass through it (the same C++ runtime on both sides).
using GrpcModuleEntry = GrpcFrontEnd* (*)(const GrpcServerOptions& options, TranscriptionService& service);
inline constexpr const char kGrpcModuleEntry[] = "steno_grpc_front_end_v1";

// Opens the module (once per process) without making anything: throws kUnimplemented saying why this steno cannot
// serve gRPC -- built without gRPC, or the module missing or not loadable (the loader's message) -- so that a
// server fails at its start, before it loads a model.
void require_grpc_module();

// A front end from the module (require_grpc_module() first). `service` must outlive it.
std::unique_ptr<GrpcFrontEnd> open_grpc_front_end(const GrpcServerOptions& options, TranscriptionService& service);

}  // namespace steno::serve::rpc
