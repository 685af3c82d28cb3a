// The entry point of libsteno-grpc.so (module.h): GrpcServer behind GrpcFrontEnd.
#include "serve/grpc/module.h"

#include <type_traits>

namespace steno::serve::rpc {
namespace {

class ModuleFrontEnd final : public GrpcFrontEnd {
 public:
  ModuleFrontEnd(const GrpcServerOptions& options, TranscriptionService& service) : server_(options, service) {}
  void start() override { server_.start(); }
  uint16_t port() const override { return server_.port(); }
  void stop() override { server_.stop(); }

 private:
  GrpcServer server_;
};

}  // namespace
}  // namespace steno::serve::rpc

// The module's objects are compiled with hidden visibility; this is the one name it exports.
extern "C" __attribute__((visibility("default"))) steno::serve::rpc::GrpcFrontEnd* steno_grpc_front_end_v1(
    const steno::serve::rpc::GrpcServerOptions& options, steno::serve::TranscriptionService& service) {
  return new steno::serve::rpc::ModuleFrontEnd(options, service);
}

static_assert(std::is_same_v<decltype(&steno_grpc_front_end_v1), steno::serve::rpc::GrpcModuleEntry>);
