// The HTTP/1.1 transport: an acceptor and connections on a pool of threads running one io_context. This header is
// Beast-free; listener.cc and connection.cc are the only translation units that include Beast (they compile
// slowly, so nothing else should).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "serve/http/message.h"

namespace steno::serve::http {

// How much of a large body arrives before check_body_start looks at it: enough for any audio header, and the first
// seconds of the audio for formats whose header states no length.
inline constexpr size_t kBodyStartBytes = 256 * 1024;

struct TransportOptions {
  std::string host;
  uint16_t port = 0;
  int io_threads = 1;
  size_t max_header_bytes = 0;
  size_t max_body_bytes = 0;       // a body of a route that is no upload: read into memory
  size_t max_upload_bytes = 0;     // a body of an upload route (RouteOptions::upload): spooled (body_spool.h)
  size_t upload_buffer_bytes = 0;  // an upload past this many bytes goes to a temporary file
  std::string upload_dir;          // where ("" = $TMPDIR, else /tmp)
  std::chrono::milliseconds read_timeout{0}, idle_timeout{0}, write_timeout{0}, drain_timeout{0};
  std::string server_header;  // the Server: header value
};

// The largest body a request may send, and the setting that raises it (named in the 413).
struct BodyLimit {
  size_t bytes = 0;
  std::string setting;  // "max_upload_mb"
};

// What the transport calls for each request. Implemented by HttpServer.
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Called when a request's headers are in and before its body is read (`head.body` is empty). Returning a
  // response answers it without reading the body (the connection is then closed): e.g. 401, so that an
  // unauthenticated client cannot make the server read a large upload.
  virtual std::optional<HttpResponse> check_head(const HttpRequest& head) = 0;
  // The body limit of the request's route (uploads take more than other requests); called after check_head.
  virtual BodyLimit body_limit(const HttpRequest& head) = 0;
  // Called once for a request whose body is over kBodyStartBytes (Content-Length), when that much of it has come:
  // an answer refuses it from its start without reading the rest (the connection is then closed): e.g. 413 for an
  // upload whose audio header says it is longer than the server takes.
  virtual std::optional<HttpResponse> check_body_start(const HttpRequest& head, std::string_view body_start,
                                                       uint64_t content_length) = 0;
  // The complete request; `respond` may be called on any thread, now or later.
  virtual void handle(HttpRequest request, Responder respond) = 0;
  // A transport-level failure (408, 413, 431, 400 for malformed HTTP) in the shape of the API of `path`.
  virtual HttpResponse render_error(std::string_view path, const HttpError& error) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Binds and listens (kUnavailable naming the address on failure), then starts the I/O threads.
  virtual void start() = 0;
  virtual uint16_t port() const = 0;
  // Stops accepting; closes idle connections; lets connections with a request in progress finish it (answered
  // with Connection: close) for up to drain_timeout; then closes the rest and joins the threads.
  virtual void stop() = 0;
};

std::unique_ptr<Transport> make_transport(const TransportOptions& options, RequestHandler& handler);

}  // namespace steno::serve::http
