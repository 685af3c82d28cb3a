#include "errors.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace steno::serve::http {
namespace {

// OpenAI's error "type" for a status: what its SDKs and users switch on.
const char* openai_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

}  // namespace

ApiStyle api_style(std::string_view path) {
  return path.substr(0, 4) == "/v1/" || path == "/v1" ? ApiStyle::kOpenAI : ApiStyle::kKServe;
}

HttpResponse error_response(ApiStyle style, const HttpError& error) {
  nlohmann::json body;
  if (style == ApiStyle::kOpenAI) {
    body["error"] = {{"message", error.what()},
                     {"type", openai_type(error.status)},
                     {"param", error.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param)},
                     {"code", error.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code)}};
  } else {
    body["error"] = error.what();
  }
  HttpResponse r = HttpResponse::json(error.status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (error.retry_after_s > 0)
    r.headers.emplace_back("Retry-After", std::to_string(static_cast<long>(std::ceil(error.retry_after_s))));
  return r;
}

HttpError http_error(const ServeError& e) {
  HttpError out(e.http_status(), e.what(), e.param(), e.code());
  if (e.outcome() == Outcome::kQueueFull) out.retry_after_s = e.retry_after_s() > 0 ? e.retry_after_s() : 1;
  return out;
}

HttpError error_from_exception(const Error& e, std::string param) { return http_error(serve_error(e, std::move(param))); }

const char* status_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

}  // namespace steno::serve::http
