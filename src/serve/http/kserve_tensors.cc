#include "kserve_tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "steno/core/error.h"
#include "steno/serve/service.h"

namespace steno::serve::http {
namespace {

constexpr int kMaxNesting = 8;  // nested "data" arrays deeper than any real tensor are refused, not recursed into

ServeError bad(const std::string& message) { return ServeError(Outcome::kInvalidInput, message); }

// Appends the leaves of a (possibly nested) JSON array to `out`.
void flatten(const nlohmann::json& data, int depth, const std::string& input, std::vector<const nlohmann::json*>& out) {
  if (depth > kMaxNesting) throw bad(fmt::format("input '{}': 'data' is nested more than {} deep", input, kMaxNesting));
  if (!data.is_array()) {
    out.push_back(&data);
    return;
  }
  for (const auto& d : data) flatten(d, depth + 1, input, out);
}

// The shared raw-data decoding (frontend/infer_tensors.h) throws steno::Error; this parser's contract is a
// ServeError(kInvalidInput) for every malformed body.
template <typename F>
void as_bad_request(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    throw bad(e.what());
  }
}

void fill_from_json(InferTensor& t, const nlohmann::json& data) {
  std::vector<const nlohmann::json*> leaves;
  flatten(data, 0, t.name, leaves);
  if (t.datatype == "BYTES") {
    for (const auto* v : leaves) {
      if (!v->is_string())
        throw bad(fmt::format("input '{}': BYTES data must be strings (in JSON, the audio file base64-encoded)",
                              t.name));
      auto decoded = base64_decode(v->get_ref<const std::string&>());
      if (!decoded)
        throw bad(fmt::format("input '{}': BYTES data in JSON must be the audio file base64-encoded (standard "
                              "alphabet); this string is not valid base64",
                              t.name));
      t.bytes.push_back(std::move(*decoded));
    }
  } else if (t.datatype == "FP32") {
    t.fp32.reserve(leaves.size());
    for (const auto* v : leaves) {
      if (!v->is_number()) throw bad(fmt::format("input '{}': FP32 data must be numbers", t.name));
      t.fp32.push_back(v->get<float>());
    }
  }
}

std::vector<int64_t> parse_shape(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) throw bad(fmt::format("{}: 'shape' must be an array of non-negative integers", where));
  std::vector<int64_t> shape;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw bad(fmt::format("{}: 'shape' must be an array of non-negative integers", where));
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

const nlohmann::json& object_field(const nlohmann::json& j, const char* key, const std::string& where) {
  static const nlohmann::json empty = nlohmann::json::object();
  const auto it = j.find(key);
  if (it == j.end()) return empty;
  if (!it->is_object()) throw bad(fmt::format("{}: '{}' must be an object", where, key));
  return *it;
}

bool bool_param(const nlohmann::json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end()) return false;
  if (!it->is_boolean()) throw bad(fmt::format("parameter '{}' must be a boolean", key));
  return it->get<bool>();
}

}  // namespace

InferRequestBody parse_infer_request(std::string_view body, std::optional<size_t> json_length) {
  InferRequestBody req;
  if (json_length && *json_length == 0) {
    // Raw binary request: the body is the one input. Accept it with or without the BYTES element's length prefix.
    InferTensor t;
    t.name = "audio";
    t.datatype = "BYTES";
    t.shape = {1};
    uint32_t len = 0;
    if (body.size() >= 4) std::memcpy(&len, body.data(), 4);
    t.bytes.emplace_back(body.size() >= 4 && len == body.size() - 4 ? body.substr(4) : body);
    req.inputs.push_back(std::move(t));
    req.binary_data_output = true;  // the extension returns every output binary for a raw request
    return req;
  }
  std::string_view json_text = body, binary;
  if (json_length) {
    if (*json_length > body.size())
      throw bad(fmt::format("Inference-Header-Content-Length is {} but the body has only {} bytes", *json_length,
                            body.size()));
    json_text = body.substr(0, *json_length);
    binary = body.substr(*json_length);
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(fmt::format("malformed JSON in the inference request: {}", e.what()));
  }
  if (!doc.is_object()) throw bad("the inference request must be a JSON object");
  if (const auto it = doc.find("id"); it != doc.end()) {
    if (!it->is_string()) throw bad("'id' must be a string");
    req.id = it->get<std::string>();
  }
  req.parameters = object_field(doc, "parameters", "the request");
  req.binary_data_output = bool_param(req.parameters, "binary_data_output");

  const auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_array() || inputs->empty())
    throw bad("the inference request needs an 'inputs' array with the audio input");
  size_t offset = 0;  // into `binary`
  for (const auto& in : *inputs) {
    if (!in.is_object()) throw bad("each element of 'inputs' must be an object");
    InferTensor t;
    const auto name = in.find("name");
    if (name == in.end() || !name->is_string()) throw bad("an input has no 'name' string");
    t.name = name->get<std::string>();
    const std::string where = fmt::format("input '{}'", t.name);
    const auto datatype = in.find("datatype");
    if (datatype == in.end() || !datatype->is_string()) throw bad(fmt::format("{}: 'datatype' is missing", where));
    t.datatype = datatype->get<std::string>();
    const auto shape = in.find("shape");
    if (shape == in.end()) throw bad(fmt::format("{}: 'shape' is missing", where));
    t.shape = parse_shape(*shape, where);
    t.parameters = object_field(in, "parameters", where);
    if (const auto size = t.parameters.find("binary_data_size"); size != t.parameters.end()) {
      if (!json_length) throw bad(fmt::format("{}: binary_data_size given without Inference-Header-Content-Length", where));
      if (!size->is_number_unsigned()) throw bad(fmt::format("{}: binary_data_size must be a non-negative integer", where));
      const uint64_t n = size->get<uint64_t>();
      if (n > binary.size() - offset)
        throw bad(fmt::format("{}: binary_data_size is {} bytes but only {} binary bytes remain in the body", where,
                              n, binary.size() - offset));
      as_bad_request([&] { fill_from_raw(t, binary.substr(offset, n)); });
      offset += n;
    } else {
      const auto data = in.find("data");
      if (data == in.end()) throw bad(fmt::format("{}: 'data' is missing (and no binary_data_size was given)", where));
      fill_from_json(t, *data);
    }
    as_bad_request([&] { check_element_count(t); });
    req.inputs.push_back(std::move(t));
  }
  if (offset != binary.size())
    throw bad(fmt::format("the body has {} binary bytes after the JSON header but the inputs' binary_data_size "
                          "account for {}",
                          binary.size(), offset));

  if (const auto outputs = doc.find("outputs"); outputs != doc.end()) {
    if (!outputs->is_array()) throw bad("'outputs' must be an array");
    for (const auto& out : *outputs) {
      if (!out.is_object() || !out.contains("name") || !out["name"].is_string())
        throw bad("each element of 'outputs' must be an object with a 'name'");
      RequestedOutput o{out["name"].get<std::string>(), req.binary_data_output};
      const auto& params = object_field(out, "parameters", fmt::format("output '{}'", o.name));
      if (params.contains("binary_data")) o.binary = bool_param(params, "binary_data");
      req.outputs.push_back(std::move(o));
    }
  }
  return req;
}

HttpResponse encode_infer_response(const std::string& model, const std::optional<std::string>& id,
                                   const std::vector<OutputTensor>& outputs) {
  nlohmann::json doc = {{"model_name", model}, {"model_version", "1"}};
  if (id) doc["id"] = *id;
  doc["outputs"] = nlohmann::json::array();
  std::string binary;
  for (const auto& o : outputs) {
    nlohmann::json j = {{"name", o.name}, {"datatype", o.datatype}, {"shape", o.shape}};
    if (o.binary) {
      const std::string data = raw_output_data(o);
      binary += data;
      j["parameters"] = {{"binary_data_size", data.size()}};
    } else if (o.datatype == "BYTES") {
      j["data"] = o.bytes;
    } else {
      j["data"] = o.fp32;
    }
    doc["outputs"].push_back(std::move(j));
  }
  std::string header = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (binary.empty() && std::none_of(outputs.begin(), outputs.end(), [](const auto& o) { return o.binary; }))
    return HttpResponse::json(200, std::move(header));
  HttpResponse r = HttpResponse::text(200, header + binary, "application/octet-stream");
  r.headers.emplace_back("Inference-Header-Content-Length", std::to_string(header.size()));
  return r;
}

std::optional<std::string> base64_decode(std::string_view in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace steno::serve::http
