// steno's HTTP front end: the OpenAI transcription API (/v1), KServe v2 over HTTP (/v2) and /metrics, on an
// HTTP/1.1 server built on Boost.Beast (the Beast code stays in src/serve/http; this header does not include it).
//
// A request's path: a connection reads it under limits (header size, body size, a read deadline), the router
// picks a handler, the handler parses the body (on a worker pool, off the I/O threads) and submits it to the
// service, which decodes the audio on that same worker thread; the answer callback renders the response, which the
// connection writes on its own strand. A client that disconnects while its request waits sets the request's
// `cancelled` flag. GET /metrics is the service's Prometheus text. See docs/http-api.md for the endpoints and every
// status the server answers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "steno/serve/service.h"

namespace steno::serve::http {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback by default; the server's configuration has the API-key rule
  uint16_t port = 8000;            // 0 = an ephemeral port (read it back with HttpServer::port())
  int io_threads = 2;              // threads running the I/O (accept, read, write)
  int worker_threads = 2;          // threads parsing bodies and decoding audio before submission

  size_t max_header_bytes = 16 * 1024;        // larger request headers -> 431
  size_t max_body_bytes = size_t{64} << 20;   // larger bodies -> 413 naming the limit (--max-body-mb)
  // Audio uploads (OpenAI's multipart routes, KServe's binary inference): up to max_upload_bytes (else 413 naming
  // --max-upload-mb), in memory up to upload_buffer_bytes, past that in an unnamed temporary file in upload_dir
  // ("" = $TMPDIR, else /tmp) that goes when the request ends.
  size_t max_upload_bytes = size_t{2} << 30;
  size_t upload_buffer_bytes = size_t{32} << 20;
  std::string upload_dir;

  // A request must arrive whole (headers and body) within read_timeout of its first byte, else 408 and the
  // connection is closed: a client trickling one byte per second cannot hold a connection forever.
  std::chrono::milliseconds read_timeout{30'000};
  // A keep-alive connection with no request in progress is closed quietly after idle_timeout.
  std::chrono::milliseconds idle_timeout{60'000};
  // A client that does not read its response within write_timeout is dropped.
  std::chrono::milliseconds write_timeout{30'000};
  // stop() waits this long for in-flight requests to be answered, then closes what is left.
  std::chrono::milliseconds drain_timeout{30'000};

  // When non-empty, every request but the health probes needs `Authorization: Bearer <api_key>` (else 401).
  std::string api_key;

  std::string server_name = "steno";
  std::string server_version = "0.1.0";
};

class HttpServer {
 public:
  // `service` must outlive the server. Nothing is bound until start().
  HttpServer(ServerOptions options, TranscriptionService& service);
  ~HttpServer();  // stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port, starts the I/O and worker threads and returns. Throws steno::Error(kUnavailable) naming the
  // address when it cannot listen (port in use, bad host), kInvalidArgument for invalid options.
  void start();

  // The bound port (the real one when options.port was 0). Valid after start().
  uint16_t port() const;

  // Stops accepting, closes idle connections, waits (up to drain_timeout) for in-flight requests to be answered,
  // then closes every connection and joins the threads. Does not drain the service: call its drain() after.
  // Idempotent; safe to call from any thread but the server's own.
  void stop();

  const ServerOptions& options() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace steno::serve::http
