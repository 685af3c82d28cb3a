// GrpcServer in a build without gRPC (STENO_WITH_GRPC=OFF, or gRPC not found): it can be named and constructed,
// and start() explains why it cannot serve.
#include "steno/core/error.h"
#include "serve/grpc/server.h"

namespace steno::serve::rpc {

class GrpcServer::Impl {
 public:
  explicit Impl(GrpcServerOptions o) : options(std::move(o)) {}
  GrpcServerOptions options;
};

bool GrpcServer::available() { return false; }

GrpcServer::GrpcServer(GrpcServerOptions options, TranscriptionService&)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
GrpcServer::~GrpcServer() = default;

void GrpcServer::start() {
  fail(ErrorCode::kUnimplemented,
       "this steno was built without gRPC (CMake STENO_WITH_GRPC=OFF, or gRPC was not found), so it cannot serve "
       "KServe over gRPC on port {}; rebuild with libgrpc++-dev, protobuf-compiler-grpc and protobuf-compiler "
       "installed, or leave --grpc-port at 0",
       impl_->options.port);
}

uint16_t GrpcServer::port() const { return 0; }
void GrpcServer::stop() {}
const GrpcServerOptions& GrpcServer::options() const { return impl_->options; }

}  // namespace steno::serve::rpc
