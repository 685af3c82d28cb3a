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

HttpError error_from_outcome(Outcome outcome, const std::string& message, double retry_after_s) {
  switch (outcome) {
    case Outcome::kOk:
      break;
    case Outcome::kQueueFull: {
      HttpError e(429, message.empty() ? "the server is at capacity; retry later" : message, "", "queue_full");
      e.retry_after_s = retry_after_s > 0 ? retry_after_s : 1;
      return e;
    }
    case Outcome::kDeadlineExceeded:
      return HttpError(504, message.empty() ? "the request's deadline passed before it could run" : message, "",
                       "deadline_exceeded");
    case Outcome::kCancelled:
      return HttpError(499, message.empty() ? "the request was cancelled" : message, "", "cancelled");
    case Outcome::kShuttingDown:
      return HttpError(503, message.empty() ? "the server is shutting down" : message, "", "shutting_down");
    case Outcome::kUnknownModel:
      return HttpError(404, message.empty() ? "unknown model" : message, "model", "model_not_found");
    case Outcome::kError:
      return HttpError(500, message.empty() ? "internal error" : message, "", "internal_error");
  }
  return HttpError(500, "internal error: a successful outcome was reported as an error");
}

HttpError error_from_exception(const Error& e, std::string param) {
  switch (e.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kDataLoss:
      return HttpError(400, e.what(), std::move(param), "invalid_input");
    case ErrorCode::kOutOfRange:
      return HttpError(413, e.what(), std::move(param), "over_limit");
    case ErrorCode::kUnimplemented:
      return HttpError(415, e.what(), std::move(param), "unsupported_format");
    case ErrorCode::kNotFound:
      return HttpError(404, e.what(), std::move(param), "not_found");
    case ErrorCode::kUnavailable:
    case ErrorCode::kResourceExhausted:
      return HttpError(503, e.what(), std::move(param), "unavailable");
    case ErrorCode::kInternal:
      break;
  }
  return HttpError(500, e.what(), std::move(param), "internal_error");
}

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
