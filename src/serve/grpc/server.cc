// GrpcServer: the gRPC server (listening port, message size limit, the service) and its orderly stop.
#include "serve/grpc/server.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <climits>

#include "grpc_context.h"
#include "kserve_service.h"
#include "steno/core/error.h"

namespace steno::serve::rpc {
namespace {

// "host:port", with an IPv6 literal in brackets.
std::string listen_address(const std::string& host, uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return ipv6 ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

void validate(const GrpcServerOptions& o) {
  STENO_CHECK(!o.host.empty(), "the gRPC host is empty");
  STENO_CHECK(o.worker_threads >= 1, "worker_threads must be >= 1, got {}", o.worker_threads);
  STENO_CHECK(o.max_message_bytes >= 1, "max_message_bytes must be >= 1");
  STENO_CHECK(o.drain_timeout.count() >= 0, "drain_timeout must be >= 0");
}

}  // namespace

class GrpcServer::Impl {
 public:
  Impl(GrpcServerOptions options, TranscriptionService& service)
      : ctx_(std::make_shared<GrpcContext>(std::move(options), service)) {
    validate(ctx_->options);
  }
  ~Impl() { stop(); }

  void start() {
    STENO_CHECK(!server_, "the gRPC server was already started");
    const GrpcServerOptions& o = ctx_->options;
    pool_ = std::make_unique<WorkPool>(o.worker_threads);
    ctx_->pool = pool_.get();
    service_ = std::make_unique<KServeService>(ctx_);
    const std::string address = listen_address(o.host, o.port);
    int bound = 0;
    ::grpc::ServerBuilder builder;
    builder.AddListeningPort(address, ::grpc::InsecureServerCredentials(), &bound);
    // gRPC enables SO_REUSEPORT by default: a second server would then share the port silently instead of failing.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(o.max_message_bytes, INT_MAX)));
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (!server_ || bound == 0) {
      server_.reset();
      pool_.reset();
      fail(ErrorCode::kUnavailable, "cannot listen for gRPC on {} (port in use, or not an address of this host?)",
           address);
    }
    port_ = static_cast<uint16_t>(bound);
  }

  void stop() {
    if (!server_) return;
    // New calls are refused at once; calls in flight get drain_timeout, then gRPC cancels them (OnCancel finishes
    // each and flags its request for the core). Shutdown returns when every call is done.
    server_->Shutdown(std::chrono::system_clock::now() + ctx_->options.drain_timeout);
    server_.reset();
    service_.reset();
    pool_.reset();  // runs what is still queued (cancelled calls' tasks return at once), then joins
    ctx_->pool = nullptr;
  }

  uint16_t port() const { return port_; }
  const GrpcServerOptions& options() const { return ctx_->options; }

 private:
  std::shared_ptr<GrpcContext> ctx_;
  std::unique_ptr<WorkPool> pool_;
  std::unique_ptr<KServeService> service_;
  std::unique_ptr<::grpc::Server> server_;
  uint16_t port_ = 0;
};

GrpcServer::GrpcServer(GrpcServerOptions options, TranscriptionService& service)
    : impl_(std::make_unique<Impl>(std::move(options), service)) {}
GrpcServer::~GrpcServer() = default;
void GrpcServer::start() { impl_->start(); }
uint16_t GrpcServer::port() const { return impl_->port(); }
void GrpcServer::stop() { impl_->stop(); }
const GrpcServerOptions& GrpcServer::options() const { return impl_->options(); }

}  // namespace steno::serve::rpc
