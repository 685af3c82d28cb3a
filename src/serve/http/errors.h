// Error responses: which status each failure gets, and the body shape of the API the path belongs to.
//   OpenAI (/v1/...):  {"error": {"message", "type", "param", "code"}}   (what the openai SDKs parse)
//   KServe (others):   {"error": "..."}                                  (serving-protocols.md §2.1)
#pragma once

#include <string>
#include <string_view>

#include "steno/core/error.h"
#include "steno/serve/http/message.h"
#include "steno/serve/service.h"

namespace steno::serve::http {

enum class ApiStyle { kOpenAI, kKServe };
ApiStyle api_style(std::string_view path);

HttpResponse error_response(ApiStyle style, const HttpError& error);
inline HttpResponse error_response(std::string_view path, const HttpError& error) {
  return error_response(api_style(path), error);
}

// A rejection from the inference core: kQueueFull -> 429 (+ Retry-After), kDeadlineExceeded -> 504,
// kShuttingDown -> 503, kUnknownModel -> 404, kCancelled -> 499 (nginx's "client closed request"; the client is
// normally gone and never reads it), kError -> 500.
HttpError error_from_outcome(Outcome outcome, const std::string& message, double retry_after_s);

// A steno::Error raised while handling untrusted input (audio decoding, tensor parsing):
// kInvalidArgument / kDataLoss -> 400, kOutOfRange -> 413 (over a limit: the message names it),
// kUnimplemented -> 415 (a container or codec steno does not read), kNotFound -> 404, others -> 500.
HttpError error_from_exception(const Error& e, std::string param = {});

const char* status_reason(int status);

}  // namespace steno::serve::http
