// The server's own request and response types: what handlers see, free of Beast so that the API code (OpenAI,
// KServe) compiles fast and can be tested without a socket. The connection code converts to and from Beast.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "serve/http/body_spool.h"

namespace steno::serve::http {

struct HttpRequest {
  std::string id;      // "req-42": unique per request, sent back as X-Request-Id and used in logs
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // target without the query
  std::string query;   // after '?', undecoded
  std::vector<std::pair<std::string, std::string>> headers;  // in arrival order, names as sent
  // In memory, or in a temporary file for a large upload (deleted with the last copy of the request); null until
  // the body is read. Shared so that a request can be copied (into a work pool's task) without copying the body.
  std::shared_ptr<const BodySpool> body;
  std::string remote;  // peer address, for logs
  std::map<std::string, std::string> params;  // path parameters captured by the router ({model} -> "name")
  // Set by the connection when the client goes away before its response is written; handed on to the
  // TranscriptionRequest so that the core drops work nobody will read.
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

  // The body's bytes ("" when there is none).
  std::string_view body_view() const { return body ? body->view() : std::string_view(); }
  // The first header of that name (case-insensitive), or "" when absent.
  std::string_view header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Retry-After, ...)
  std::string body;
  bool close = false;  // close the connection after this response (e.g. the request body was not read)

  static HttpResponse json(int status, std::string body);
  static HttpResponse text(int status, std::string body, std::string content_type = "text/plain; charset=utf-8");
  static HttpResponse empty(int status);
};

// A failure that maps to one HTTP status. Handlers throw it (or build it for an asynchronous reply); the server
// renders it in the error shape of the API the path belongs to (OpenAI's {"error": {...}} under /v1, KServe's
// {"error": "..."} elsewhere).
class HttpError : public std::runtime_error {
 public:
  HttpError(int status, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(std::move(message)), status(status), param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string param;          // the request field at fault (OpenAI's "param"), "" when none
  std::string code;           // a machine-readable code (OpenAI's "code"), "" when none
  double retry_after_s = 0;   // > 0: sent as Retry-After (429)
};

// Where a handler's response goes. Thread-safe and callable from any thread (the inference core's callback
// thread included), exactly once; the connection writes it on its own strand. A Responder dropped without being
// called answers 500, so that a handler bug never leaves a client hanging.
//
// A response may also go in parts (server-sent events as they are made): begin(head) sends the status, headers
// and first bytes at once, more(bytes) sends the next bytes, and the call that answers (operator()) sends the last
// ones (its status and headers are then ignored) and ends it. Parts are sent in the order of the calls, which the
// caller serialises. A sink that cannot stream gets the whole response at the end.
class Responder {
 public:
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void send(HttpResponse response) = 0;
    // Streaming, for sinks that can (the connection): the head and first bytes, then more bytes; send() ends it.
    virtual bool streams() const { return false; }
    virtual void begin(HttpResponse /*head*/) {}
    virtual void more(std::string /*bytes*/) {}
  };

  Responder() = default;
  explicit Responder(std::shared_ptr<Sink> sink) : state_(std::make_shared<State>(std::move(sink))) {}

  void operator()(HttpResponse response) const;
  bool valid() const { return state_ != nullptr; }

  // A response in parts (above). begin() after begin() or after the answer is ignored; more() before begin().
  void begin(HttpResponse head) const;
  void more(std::string bytes) const;
  bool begun() const;  // begin() was called: the status and headers are gone

 private:
  struct State {
    explicit State(std::shared_ptr<Sink> s) : sink(std::move(s)) {}
    ~State();
    std::shared_ptr<Sink> sink;
    std::atomic<bool> sent{false};
    std::mutex mu;                    // the parts below
    bool begun = false;
    std::optional<HttpResponse> held;  // a begun response kept whole for a sink that cannot stream
  };
  std::shared_ptr<State> state_;  // shared: copies of a Responder (e.g. inside std::function) answer once
};

}  // namespace steno::serve::http
