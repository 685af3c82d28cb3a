// libFuzzer target: steno's HTTP/1.1 transport (serve/http/listener.h: Beast's parser under steno's limits,
// Expect: 100-continue, chunked and spooled bodies, keep-alive and pipelining, the error answers) on any bytes, over
// a real loopback connection. One server runs for the whole process with a handler that answers every request with
// its method, path and body size; each input is sent on a new connection, the write side is shut, and the answer is
// read until the server closes. The server must answer (a status line first) or close, within the timeouts, never
// crash or hang; a transport that stops accepting fails the next input. Built and run by fuzz/run.sh.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "serve/http/listener.h"

namespace {

using namespace steno::serve::http;

class EchoHandler : public RequestHandler {
 public:
  std::optional<HttpResponse> check_head(const HttpRequest& head) override {
    if (head.path == "/refuse") return HttpResponse::text(401, "no");  // answered before the body is read
    return std::nullopt;
  }
  BodyLimit body_limit(const HttpRequest& head) override {
    return head.path.rfind("/upload", 0) == 0 ? BodyLimit{1 << 20, "max_upload_mb"} : BodyLimit{4096, "max_body_mb"};
  }
  std::optional<HttpResponse> check_body_start(const HttpRequest&, std::string_view, uint64_t) override {
    return std::nullopt;
  }
  void handle(HttpRequest request, Responder respond) override {
    respond(HttpResponse::text(200, request.method + " " + request.path + " " +
                                        std::to_string(request.body_view().size())));
  }
  HttpResponse render_error(std::string_view, const HttpError& error) override {
    return HttpResponse::text(error.status, error.what());
  }
};

struct Server {
  EchoHandler handler;
  TransportOptions options;
  std::unique_ptr<Transport> transport;
  Server() {
    options.host = "127.0.0.1";
    options.max_header_bytes = 8192;
    options.max_body_bytes = 4096;
    options.max_upload_bytes = 1 << 20;
    options.upload_buffer_bytes = 16 * 1024;  // larger uploads go to a temporary file
    options.read_timeout = std::chrono::milliseconds(500);
    options.idle_timeout = std::chrono::milliseconds(500);
    options.write_timeout = std::chrono::milliseconds(500);
    options.drain_timeout = std::chrono::milliseconds(100);
    transport = make_transport(options, handler);
    transport->start();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Server server;  // one for the process: the transport must survive every input
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) std::abort();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(server.transport->port());
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int connected;  // interrupted, the handshake goes on: the retry then says EALREADY or, done, EISCONN
  do connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  while (connected != 0 && (errno == EINTR || errno == EALREADY));
  if (connected != 0 && errno != EISCONN) std::abort();  // the transport stopped accepting
  timeval timeout{.tv_sec = 5, .tv_usec = 0};  // well past the server's own timeouts: longer is a hang
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  size_t sent = 0;
  while (sent < size) {  // the server may answer and close before reading everything: a failed send is fine
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[4096];
  // libFuzzer's -timeout check is a SIGALRM every second, and a socket call under SO_RCVTIMEO is never restarted
  // after a signal: EINTR is retried, and the hang is judged by the clock, not by the call.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout.tv_sec);
  for (;;) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) break;  // closed by the server
    if (n < 0) {
      if (errno == ECONNRESET) break;
      if (errno == EINTR && std::chrono::steady_clock::now() < deadline) continue;
      std::abort();  // no answer and no close within 5 s: a hang
    }
    answer.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (!answer.empty() && answer.rfind("HTTP/1.1 ", 0) != 0) std::abort();  // bytes that are no HTTP response
  return 0;
}
