// Clients for the HTTP tests: a Beast-based HTTP/1.1 client over a plain socket (requests serialized by Beast,
// responses parsed by Beast's parser, reads bounded by SO_RCVTIMEO so a server bug fails a test instead of
// hanging it), raw byte-level access for misbehaving-client tests, and `curl` through popen.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace steno::testing {

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool keep_alive = true;
  std::string header(std::string_view name) const;  // "" when absent (case-insensitive)
};

using Headers = std::vector<std::pair<std::string, std::string>>;

class HttpClient {
 public:
  explicit HttpClient(uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(20));
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // A full request on this connection (keep-alive), its response parsed by Beast. status 0 when none came.
  ClientResponse request(const std::string& method, const std::string& target, const std::string& body = {},
                         const Headers& headers = {});
  bool send_raw(std::string_view bytes);
  // Reads one response; nullopt when the connection closed or timed out first.
  std::optional<ClientResponse> read_response();
  // True when the server closes the connection within `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout);
  void close();

 private:
  int fd_ = -1;
  std::string pending_;  // bytes read past the last response
};

struct CurlResult {
  int status = 0;  // 0: curl itself failed
  std::string body;
};
// Runs `curl -sS <args> http://127.0.0.1:<port><target>` and returns the status and body.
CurlResult curl(uint16_t port, const std::string& target, const std::string& args);

// A multipart/form-data body: text fields, then the file (name "file" unless file_field is given).
struct Form {
  std::vector<std::pair<std::string, std::string>> fields;
  std::optional<std::string> file;  // bytes
  std::string file_field = "file";
  std::string filename = "audio.flac";
  std::string boundary = "steno-test-boundary-7d1f";
  std::string body() const;
  std::string content_type() const { return "multipart/form-data; boundary=" + boundary; }
};

// POST /v1/audio/transcriptions as an OpenAI client sends it: `bytes` as the form's file part named `filename`,
// with `response_format`.
ClientResponse post_transcription(uint16_t port, const std::string& filename, const std::string& bytes,
                                  const std::string& response_format);

std::string read_file(const std::string& path);
std::string base64_encode(std::string_view bytes);

}  // namespace steno::testing
