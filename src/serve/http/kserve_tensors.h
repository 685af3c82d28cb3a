// KServe v2 inference requests and responses over HTTP: the JSON form and the binary tensor extension, to and
// from the wire-neutral tensors of frontend/infer_tensors.h. Parsing checks structure only (every malformed body ->
// a ServeError(kInvalidInput), 400, with a message naming the field); what the model accepts is checked by
// frontend/kserve_model.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/frontend/infer_tensors.h"
#include "serve/http/message.h"

namespace steno::serve::http {

// `json_length`: the Inference-Header-Content-Length header, when present (binary extension); 0 means the body is
// a single raw input (a BYTES element: the encoded audio file).
InferRequestBody parse_infer_request(std::string_view body, std::optional<size_t> json_length);

// The response body: JSON, or the JSON header + binary data when any output is binary (Inference-Header-Content-
// Length then set).
HttpResponse encode_infer_response(const std::string& model, const std::optional<std::string>& id,
                                   const std::vector<OutputTensor>& outputs);

// Standard base64 (RFC 4648 §4, padding optional, no whitespace); nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace steno::serve::http
