// Error responses: the status each failure gets, and the body shape of the API the path belongs to.
//   OpenAI (/v1/...):  {"error": {"message", "type", "param", "code"}}   (what the openai SDKs parse)
//   KServe (others):   {"error": "..."}                                  (KServe v2's error body)
// The statuses of the service's failures are ServeError's (service.h): this file only renders them.
#pragma once

#include <string>
#include <string_view>

#include "steno/core/error.h"
#include "serve/http/message.h"
#include "steno/serve/service.h"

namespace steno::serve::http {

enum class ApiStyle { kOpenAI, kKServe };
ApiStyle api_style(std::string_view path);

HttpResponse error_response(ApiStyle style, const HttpError& error);
inline HttpResponse error_response(std::string_view path, const HttpError& error) {
  return error_response(api_style(path), error);
}

// A failure of the service (its status, its code, the field at fault, a retry hint) as an HTTP error.
HttpError http_error(const ServeError& e);
// A steno::Error raised while reading a request's content: http_error(serve_error(e, param)).
HttpError error_from_exception(const Error& e, std::string param = {});

const char* status_reason(int status);

}  // namespace steno::serve::http
