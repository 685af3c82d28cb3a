#include "serve_load_http.h"

#include <array>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <nlohmann/json.hpp>
#include <optional>

namespace serve_load {

namespace {

constexpr const char* kBoundary = "steno-serve-load-5b9e2c";

// What an answer says, as one comparable string: a transcription's {"text"}, or a diarization's {"segments"} (their
// JSON); nullopt when it is neither.
std::optional<std::string> answer_text(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  if (const auto t = j.find("text"); t != j.end() && t->is_string()) return t->get<std::string>();
  if (const auto s = j.find("segments"); s != j.end() && s->is_array()) return s->dump();
  return std::nullopt;
}

}  // namespace

Request transcription_request(const Options& o, const std::string& filename, const std::string& content_type,
                              const std::string& audio) {
  Request r;
  r.body = std::string("--") + kBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" +
           filename + "\"\r\nContent-Type: " + content_type + "\r\n\r\n" + audio + "\r\n--" + kBoundary +
           "\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\njson\r\n--" + kBoundary +
           "--\r\n";
  r.head = "POST /v1/audio/" + o.route + " HTTP/1.1\r\nHost: " + o.host + ":" + std::to_string(o.port) +
           "\r\nUser-Agent: steno-serve-load\r\nAccept: application/json\r\nContent-Type: multipart/form-data; "
           "boundary=" +
           kBoundary + "\r\nContent-Length: " + std::to_string(r.body.size()) + "\r\n\r\n";
  return r;
}

Verdict judge(const bhttp::response<bhttp::string_body>& r, const std::string& expected) {
  Verdict v;
  if (r.result_int() != 200) {
    v.reason = "http " + std::to_string(r.result_int());
    return v;
  }
  const auto j = nlohmann::json::parse(r.body(), nullptr, false);
  const std::optional<std::string> said = j.is_discarded() ? std::nullopt : answer_text(j);
  if (!said) {
    v.reason = "200 without JSON {\"text\"} or {\"segments\"}";
    return v;
  }
  v.got = *said;
  if (v.got != expected) {
    v.wrong_text = true;
    v.reason = "wrong text";
    return v;
  }
  v.ok = true;
  return v;
}

Result result_of(const Verdict& v, bool accept_differing_text) {
  if (v.ok || (v.wrong_text && accept_differing_text)) return Result::kOk;
  return v.wrong_text ? Result::kWrong : Result::kFailed;
}

SyncResult sync_request(tcp::socket& socket, const std::string& head, const std::string& body) {
  SyncResult r;
  error_code ec;
  const std::array<net::const_buffer, 2> bufs = {net::buffer(head), net::buffer(body)};
  net::write(socket, bufs, ec);
  if (ec) {
    r.error = "write: " + ec.message();
    return r;
  }
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kBodyLimit);
  bhttp::read(socket, buffer, parser, ec);
  if (ec) {
    r.error = "read: " + ec.message();
    return r;
  }
  r.response = parser.release();
  r.ok = true;
  return r;
}

bool connect_to(tcp::socket& socket, const tcp::endpoint& ep, std::string& error) {
  error_code ec;
  socket.connect(ep, ec);
  if (ec) error = "connect: " + ec.message();
  return !ec;
}

ReferenceText reference_text(tcp::socket& socket, const Request& request) {
  ReferenceText t;
  SyncResult r = sync_request(socket, request.head, request.body);
  if (!r.ok) {
    t.error = r.error;
    return t;
  }
  t.status = r.response.result_int();
  t.keep_alive = r.response.keep_alive();
  const Verdict v = judge(r.response, "");  // any text is "wrong" against "": it is a 200 with JSON {"text"}
  t.text = v.got;
  t.answered = v.ok || v.wrong_text;
  if (!t.answered) t.error = v.reason;
  return t;
}

}  // namespace serve_load
