// KServe v2 inference requests and responses as tensors: the JSON form and the binary tensor extension
// (serving-protocols.md §2.2-2.3). Parsing checks structure only (every malformed body -> HttpError 400 with a
// message naming the field); what the model accepts is checked by the infer handler.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steno/serve/http/message.h"

namespace steno::serve::http {

struct InferTensor {
  std::string name;
  std::string datatype;         // "BYTES", "FP32", ...
  std::vector<int64_t> shape;
  nlohmann::json parameters = nlohmann::json::object();
  std::vector<std::string> bytes;  // BYTES elements (JSON: base64-decoded; binary: as sent)
  std::vector<float> fp32;         // FP32 elements
  int64_t element_count() const;
};

struct RequestedOutput {
  std::string name;
  bool binary = false;
};

struct InferRequestBody {
  std::optional<std::string> id;
  nlohmann::json parameters = nlohmann::json::object();
  std::vector<InferTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output, in the form binary_data_output says
  bool binary_data_output = false;       // request-level default for outputs
};

// `json_length`: the Inference-Header-Content-Length header, when present (binary extension); 0 means the body is
// a single raw input (a BYTES element: the encoded audio file).
InferRequestBody parse_infer_request(std::string_view body, std::optional<size_t> json_length);

// One output tensor of a response, with its data.
struct OutputTensor {
  std::string name;
  std::string datatype;  // BYTES or FP32
  std::vector<int64_t> shape;
  std::vector<std::string> bytes;
  std::vector<float> fp32;
  bool binary = false;  // sent through the binary extension
};

// The response body: JSON, or the JSON header + binary data when any output is binary (Inference-Header-Content-
// Length then set).
HttpResponse encode_infer_response(const std::string& model, const std::optional<std::string>& id,
                                   const std::vector<OutputTensor>& outputs);

// Standard base64 (RFC 4648 §4, padding optional, no whitespace); nullopt when malformed.
std::optional<std::string> base64_decode(std::string_view in);

}  // namespace steno::serve::http
