#include "test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/beast/http.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace steno::testing {

namespace bhttp = boost::beast::http;

std::string ClientResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return v;
  return {};
}

HttpClient::HttpClient(uint16_t port, std::chrono::milliseconds timeout) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
}

HttpClient::~HttpClient() { close(); }

void HttpClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool HttpClient::send_raw(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return fd_ >= 0;
}

std::optional<ClientResponse> HttpClient::read_response() {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(1 << 30);
  parser.eager(true);
  boost::system::error_code ec;
  for (;;) {
    // Feed what is buffered; read more when the parser needs it.
    if (!pending_.empty()) {
      const size_t used = parser.put(boost::asio::buffer(pending_), ec);
      if (ec && ec != bhttp::error::need_more) return std::nullopt;
      pending_.erase(0, used);
      ec = {};
      if (parser.is_done()) break;
      if (used > 0) continue;
    }
    char buf[65536];
    const ssize_t n = fd_ >= 0 ? ::recv(fd_, buf, sizeof buf, 0) : -1;
    if (n <= 0) {
      if (n == 0 && parser.got_some() && !parser.is_done()) {
        parser.put_eof(ec);  // a body delimited by the connection's end
        if (!ec && parser.is_done()) break;
      }
      return std::nullopt;
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
  ClientResponse r;
  const auto& msg = parser.get();
  r.status = static_cast<int>(msg.result_int());
  for (const auto& f : msg) r.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  r.body = msg.body();
  r.keep_alive = msg.keep_alive();
  return r;
}

ClientResponse HttpClient::request(const std::string& method, const std::string& target, const std::string& body,
                                   const Headers& headers) {
  bhttp::request<bhttp::string_body> req;
  req.method_string(method);
  req.target(target);
  req.version(11);
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::user_agent, "steno-http-test");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  std::ostringstream out;
  out << req;  // Beast's serializer
  if (!send_raw(out.str())) return {};
  return read_response().value_or(ClientResponse{});
}

bool HttpClient::wait_closed(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return true;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return true;
      pending_.append(buf, static_cast<size_t>(n));
    }
  }
  return false;
}

CurlResult curl(uint16_t port, const std::string& target, const std::string& args) {
  const std::string cmd = "curl -sS --max-time 20 -w '\\n%{http_code}' " + args + " 'http://127.0.0.1:" +
                          std::to_string(port) + target + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  CurlResult r;
  const size_t nl = out.rfind('\n');
  if (nl == std::string::npos) return r;
  r.status = std::atoi(out.c_str() + nl + 1);
  r.body = out.substr(0, nl);
  return r;
}

std::string Form::body() const {
  std::string b;
  for (const auto& [name, value] : fields)
    b += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value + "\r\n";
  if (file)
    b += "--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + file_field + "\"; filename=\"" +
         filename + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + *file + "\r\n";
  b += "--" + boundary + "--\r\n";
  return b;
}

ClientResponse post_transcription(uint16_t port, const std::string& filename, const std::string& bytes,
                                  const std::string& response_format) {
  Form form;
  form.fields = {{"response_format", response_format}};
  form.file = bytes;
  form.filename = filename;
  HttpClient client(port);
  return client.request("POST", "/v1/audio/transcriptions", form.body(), {{"Content-Type", form.content_type()}});
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string base64_encode(std::string_view bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    out += {table[v >> 18], table[(v >> 12) & 63], table[(v >> 6) & 63], table[v & 63]};
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += {table[v >> 18], table[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += {table[v >> 18], table[(v >> 12) & 63], table[(v >> 6) & 63], '='};
  }
  return out;
}

}  // namespace steno::testing
