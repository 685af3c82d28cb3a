// KServe v2 inference requests and responses as tensors, independent of the wire: the HTTP front end fills them
// from JSON or the binary tensor extension (http/kserve_tensors.h), the gRPC front end from ModelInferRequest's
// typed contents or raw_input_contents (grpc/tensor_codec.h). What the model accepts is checked by
// kserve_model.h, once, for both.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace steno::serve {

struct InferTensor {
  std::string name;
  std::string datatype;         // "BYTES", "FP32", ...
  std::vector<int64_t> shape;
  // The tensor's parameters as a JSON object: {"sample_rate": 16000} (gRPC's InferParameter maps onto the JSON
  // types: bool, int64 / uint64, double, string).
  nlohmann::json parameters = nlohmann::json::object();
  std::vector<std::string> bytes;  // BYTES elements (JSON: base64-decoded; binary and raw: as sent)
  std::vector<float> fp32;         // FP32 elements
  // -1 when the shape's product overflows.
  int64_t element_count() const;
};

struct RequestedOutput {
  std::string name;
  bool binary = false;  // HTTP: through the binary tensor extension (gRPC outputs are always raw)
};

struct InferRequestBody {
  std::optional<std::string> id;
  nlohmann::json parameters = nlohmann::json::object();
  std::vector<InferTensor> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output, in the form binary_data_output says
  bool binary_data_output = false;       // request-level default for outputs
};

// One output tensor of a response, with its data.
struct OutputTensor {
  std::string name;
  std::string datatype;  // BYTES or FP32
  std::vector<int64_t> shape;
  std::vector<std::string> bytes;
  std::vector<float> fp32;
  bool binary = false;  // HTTP: sent through the binary tensor extension
};

// Fills `t` (whose datatype is set) from raw little-endian tensor data, as the binary extension and gRPC's
// raw_input_contents carry it: BYTES elements are a 4-byte length then the bytes, FP32 are 4-byte floats. Other
// datatypes are left without data (the model refuses them by datatype, with a clearer message).
// steno::Error(kInvalidArgument) naming the input when the data is malformed.
void fill_from_raw(InferTensor& t, std::string_view data);

// kInvalidArgument when a BYTES or FP32 tensor's element count does not match its shape.
void check_element_count(const InferTensor& t);

// The raw form of an output tensor's data (BYTES: 4-byte length + bytes per element; FP32: 4-byte floats).
std::string raw_output_data(const OutputTensor& t);

}  // namespace steno::serve
