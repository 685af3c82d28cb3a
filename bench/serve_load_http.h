// The HTTP side of serve_load, shared by its load modes: building an OpenAI request (multipart, to the transcription
// or the diarization route), judging an answer against the expected one, and one request at a time on a blocking
// socket (warm-up, /metrics, a clip's reference).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <string>

#include "serve_load_common.h"

namespace serve_load {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using boost::system::error_code;

inline constexpr size_t kBodyLimit = 16u << 20;

// One OpenAI request: POST /v1/audio/<o.route>, multipart (file, response_format=json).
struct Request {
  std::string body;  // the multipart body
  std::string head;  // the request line and headers, Content-Length included
};

Request transcription_request(const Options& o, const std::string& filename, const std::string& content_type,
                              const std::string& audio);

// What one answer says: "" when it is right, else why not. Its "text" is what is compared, exactly: a
// transcription's text, or a diarization's segments (their JSON).
struct Verdict {
  bool ok = false;
  bool wrong_text = false;  // a 200 with well-formed JSON whose text differs
  std::string reason;       // for failures: "http 429", "bad json", ...
  std::string got;          // the text, when there was one
};

Verdict judge(const bhttp::response<bhttp::string_body>& r, const std::string& expected);

// Where a request stands: not yet ended, or how it ended.
enum class Result { kPending, kOk, kWrong, kFailed };

// How a verdict counts: ok, wrong (a 200 with another text) or failed. With `accept_differing_text`
// (--accept-differing-text) another text is ok too, and the caller tallies it apart as differing (v.wrong_text).
Result result_of(const Verdict& v, bool accept_differing_text);

// ---- synchronous requests (warm-up, /metrics, references) -----------------------------------------------------------

struct SyncResult {
  bool ok = false;
  std::string error;
  bhttp::response<bhttp::string_body> response;
};

SyncResult sync_request(tcp::socket& socket, const std::string& head, const std::string& body);

bool connect_to(tcp::socket& socket, const tcp::endpoint& ep, std::string& error);

// A clip's reference: its request sent alone on a connected socket, and the answer's text whatever it says (there is
// nothing to compare it with yet).
struct ReferenceText {
  bool answered = false;  // a 200 with JSON {"text"}
  int status = 0;         // the answer's HTTP status; 0 without an answer
  bool keep_alive = false;
  std::string text;
  std::string error;  // why it was not answered
};

ReferenceText reference_text(tcp::socket& socket, const Request& request);

}  // namespace serve_load
