// HttpServer: the routes (OpenAI, KServe, /metrics), authentication, and the hand-off from the transport to the
// handlers (inline on the I/O thread for cheap ones, on the work pool for those that parse bodies or decode audio).
#include "serve/http/server.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "api_context.h"
#include "header_value.h"
#include "kserve_api.h"
#include "listener.h"
#include "openai_api.h"
#include "serve/frontend/api_key.h"
#include "serve/work_pool.h"

namespace steno::serve::http {
namespace {

void validate(const ServerOptions& o) {
  STENO_CHECK(o.io_threads >= 1, "io_threads must be >= 1, got {}", o.io_threads);
  STENO_CHECK(o.worker_threads >= 1, "worker_threads must be >= 1, got {}", o.worker_threads);
  STENO_CHECK(o.max_header_bytes >= 1024, "max_header_bytes must be >= 1024, got {}", o.max_header_bytes);
  STENO_CHECK(o.max_body_bytes >= 1 && o.max_upload_bytes >= 1, "max_body_bytes and max_upload_bytes must be >= 1");
  STENO_CHECK(o.upload_buffer_bytes >= (size_t{1} << 20), "upload_buffer_bytes must be >= 1 MiB (the start of an "
              "upload is judged from memory), got {}", o.upload_buffer_bytes);
  STENO_CHECK(o.read_timeout.count() > 0 && o.idle_timeout.count() > 0 && o.write_timeout.count() > 0,
              "timeouts must be > 0");
}

}  // namespace

class HttpServer::Impl final : public RequestHandler {
 public:
  Impl(ServerOptions options, TranscriptionService& service)
      : ctx_(std::make_shared<ApiContext>(std::move(options), service)) {
    validate(ctx_->options);
    add_openai_routes(router_, ctx_);
    add_kserve_routes(router_, ctx_);
    router_.add("GET", "/metrics", [ctx = ctx_](HttpRequest&, Responder respond) {
      respond(HttpResponse::text(200, ctx->service.render_metrics(), "text/plain; version=0.0.4; charset=utf-8"));
    });
  }

  ~Impl() override { stop(); }

  void start() {
    STENO_CHECK(!transport_, "the server was already started");
    const ServerOptions& o = ctx_->options;
    pool_ = std::make_unique<WorkPool>(o.worker_threads);
    TransportOptions t;
    t.host = o.host;
    t.port = o.port;
    t.io_threads = o.io_threads;
    t.max_header_bytes = o.max_header_bytes;
    t.max_body_bytes = o.max_body_bytes;
    t.max_upload_bytes = o.max_upload_bytes;
    t.upload_buffer_bytes = o.upload_buffer_bytes;
    t.upload_dir = o.upload_dir;
    t.read_timeout = o.read_timeout;
    t.idle_timeout = o.idle_timeout;
    t.write_timeout = o.write_timeout;
    t.drain_timeout = o.drain_timeout;
    t.server_header = o.server_name + "/" + o.server_version;
    transport_ = make_transport(t, *this);
    transport_->start();
  }

  void stop() {
    if (transport_) transport_->stop();
    pool_.reset();  // runs what was queued (their answers go nowhere now), then joins
  }

  uint16_t port() const { return transport_ ? transport_->port() : 0; }
  const ServerOptions& options() const { return ctx_->options; }

  // ---- RequestHandler -----------------------------------------------------------------------------------------

  std::optional<HttpResponse> check_head(const HttpRequest& head) override {
    const std::string& key = ctx_->options.api_key;
    if (key.empty()) return std::nullopt;
    const Router::Match m = router_.match(head.method, head.path);
    if (m.route && m.route->options.public_route) return std::nullopt;
    const std::string_view auth = trim(head.header("Authorization"));
    if (bearer_token_matches(auth, key)) return std::nullopt;
    spdlog::info("{} {} {} from {}: 401 ({})", head.id, head.method, head.path, head.remote,
                 auth.empty() ? "no Authorization header" : "wrong API key");
    HttpResponse r = error_response(
        head.path, HttpError(401,
                             auth.empty() ? "missing API key: send it as 'Authorization: Bearer <key>'"
                                          : "invalid API key in the Authorization header",
                             "", "invalid_api_key"));
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }

  BodyLimit body_limit(const HttpRequest& head) override {
    const Router::Match m = router_.match(head.method, head.path);
    if (m.route && m.route->options.upload && m.route->options.upload(head)) return {ctx_->options.max_upload_bytes, "max_upload_mb"};
    return {ctx_->options.max_body_bytes, "max_body_mb"};
  }

  std::optional<HttpResponse> check_body_start(const HttpRequest& head, std::string_view body_start,
                                               uint64_t content_length) override {
    const Router::Match m = router_.match(head.method, head.path);
    if (!m.route || !m.route->options.check_body_start) return std::nullopt;
    HttpRequest with_params = head;
    with_params.params = m.params;
    try {
      std::optional<HttpResponse> early = m.route->options.check_body_start(with_params, body_start, content_length);
      if (early) spdlog::info("{} {} {}: {} from the first {} of {} bytes", head.id, head.method, head.path,
                              early->status, body_start.size(), content_length);
      return early;
    } catch (const std::exception& e) {  // a look ahead must never fail a request: the whole body decides
      spdlog::warn("{} {} {}: checking the start of the body failed: {}", head.id, head.method, head.path, e.what());
      return std::nullopt;
    }
  }

  void handle(HttpRequest request, Responder respond) override {
    const Router::Match m = router_.match(request.method, request.path);
    if (!m.route) {
      if (m.allowed_methods.empty()) {
        respond(error_response(request.path, HttpError(404, fmt::format("no such endpoint: {} {}", request.method,
                                                                        request.path),
                                                       "", "not_found")));
      } else {
        HttpResponse r = error_response(
            request.path, HttpError(405, fmt::format("{} does not accept {} (allowed: {})", request.path,
                                                     request.method, fmt::join(m.allowed_methods, ", ")),
                                    "", "method_not_allowed"));
        r.headers.emplace_back("Allow", fmt::format("{}", fmt::join(m.allowed_methods, ", ")));
        respond(std::move(r));
      }
      return;
    }
    request.params = m.params;
    const Route* route = m.route;
    if (route->options.offload) {
      pool_->post([route, request = std::move(request), respond = std::move(respond)]() mutable {
        run(*route, request, std::move(respond));
      });
    } else {
      run(*route, request, std::move(respond));
    }
  }

  HttpResponse render_error(std::string_view path, const HttpError& error) override {
    return error_response(path, error);
  }

 private:
  static void run(const Route& route, HttpRequest& request, Responder respond) {
    try {
      route.handler(request, respond);
    } catch (const HttpError& e) {
      // 501 is an answer about what steno offers (e.g. /v1/audio/translations), not a server fault.
      const bool fault = e.status >= 500 && e.status != 501;
      if (fault) spdlog::error("{} {} {}: {} {}", request.id, request.method, request.path, e.status, e.what());
      else spdlog::info("{} {} {}: {} {}", request.id, request.method, request.path, e.status, e.what());
      respond(error_response(request.path, e));
    } catch (const ServeError& e) {
      const HttpError mapped = http_error(e);
      spdlog::info("{} {} {}: {} {}", request.id, request.method, request.path, mapped.status, e.what());
      respond(error_response(request.path, mapped));
    } catch (const Error& e) {
      const HttpError mapped = error_from_exception(e);
      spdlog::info("{} {} {}: {} {}", request.id, request.method, request.path, mapped.status, e.what());
      respond(error_response(request.path, mapped));
    } catch (const std::exception& e) {
      spdlog::error("{} {} {}: unexpected error: {}", request.id, request.method, request.path, e.what());
      respond(error_response(request.path, HttpError(500, fmt::format("internal error: {}", e.what()))));
    }
  }

  std::shared_ptr<ApiContext> ctx_;
  Router router_;
  std::unique_ptr<WorkPool> pool_;
  std::unique_ptr<Transport> transport_;
};

HttpServer::HttpServer(ServerOptions options, TranscriptionService& service)
    : impl_(std::make_unique<Impl>(std::move(options), service)) {}
HttpServer::~HttpServer() = default;
void HttpServer::start() { impl_->start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::stop() { impl_->stop(); }
const ServerOptions& HttpServer::options() const { return impl_->options(); }

}  // namespace steno::serve::http
