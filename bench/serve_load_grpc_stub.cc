// serve_load built without gRPC: --grpc-port is refused at parse time (grpc_available() is false).
#include "serve_load_grpc.h"

#include <stdexcept>

namespace serve_load {

struct GrpcClosedLoopPoint::Impl {};

bool grpc_available() { return false; }

GrpcClosedLoopPoint::GrpcClosedLoopPoint(const Options& o, const std::string&, const std::string& reference,
                                         const tcp::endpoint& http_ep, int concurrency)
    : o_(o), reference_(reference), concurrency_(concurrency), window_(ioc_, http_ep, o) {
  throw std::logic_error("serve_load was built without gRPC");
}

GrpcClosedLoopPoint::~GrpcClosedLoopPoint() = default;

GrpcReference GrpcClosedLoopPoint::reference(const Options&, const std::string&) {
  return {false, 0, "", "serve_load was built without gRPC"};
}

void GrpcClosedLoopPoint::run() {}
void GrpcClosedLoopPoint::loop(int) {}

}  // namespace serve_load
