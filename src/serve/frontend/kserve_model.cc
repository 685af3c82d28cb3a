#include "serve/frontend/kserve_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "steno/core/error.h"

namespace steno::serve {
namespace {

// A numeric parameter (integer or floating point, or a numeric string); nullopt when absent.
std::optional<double> number_param(const nlohmann::json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    try {
      size_t used = 0;
      const std::string& s = it->get_ref<const std::string&>();
      const double v = std::stod(s, &used);
      if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
  }
  fail(ErrorCode::kInvalidArgument, "parameter '{}' must be a number", key);
}

// The audio of the request's one input, as the client sent it (the core decodes and checks it).
AudioInput input_audio(const InferRequestBody& body) {
  if (body.inputs.size() != 1)
    fail(ErrorCode::kInvalidArgument, "expected exactly one input ('{}'), got {}", kAudioInput, body.inputs.size());
  const InferTensor& in = body.inputs.front();
  if (in.name != kAudioInput)
    fail(ErrorCode::kInvalidArgument, "unknown input '{}': this model takes one input named '{}'", in.name,
         kAudioInput);
  if (in.datatype == "BYTES") {
    if (in.element_count() != 1)
      fail(ErrorCode::kInvalidArgument,
           "input '{}' of datatype BYTES must hold exactly one element (one encoded audio file), shape [1]; got "
           "shape [{}]",
           kAudioInput, fmt::join(in.shape, ", "));
    return EncodedAudio{in.bytes.front()};
  }
  if (in.datatype == "FP32") {
    const bool ok_shape = in.shape.size() == 1 || (in.shape.size() == 2 && in.shape[0] == 1);
    if (!ok_shape)
      fail(ErrorCode::kInvalidArgument,
           "input '{}' of datatype FP32 must be mono PCM of shape [1, N] (or [N]); got shape [{}]", kAudioInput,
           fmt::join(in.shape, ", "));
    std::optional<double> rate = number_param(in.parameters, "sample_rate");
    if (!rate) rate = number_param(body.parameters, "sample_rate");
    if (!rate)
      fail(ErrorCode::kInvalidArgument, "FP32 input '{}' needs a 'sample_rate' parameter (e.g. 16000) on the input",
           kAudioInput);
    return PcmAudio{in.fp32, *rate};
  }
  fail(ErrorCode::kInvalidArgument,
       "input '{}' has datatype {}; expected BYTES (an encoded audio file) or FP32 (PCM with a sample_rate "
       "parameter)",
       kAudioInput, in.datatype);
}

// Which outputs to return, each binary or not. Unknown names are refused.
std::vector<RequestedOutput> wanted_outputs(const InferRequestBody& body) {
  const std::vector<std::string>& known = kserve_output_names();
  if (body.outputs.empty()) {
    std::vector<RequestedOutput> all;
    for (const auto& name : known) all.push_back({name, body.binary_data_output});
    return all;
  }
  for (const auto& o : body.outputs)
    if (std::find(known.begin(), known.end(), o.name) == known.end())
      fail(ErrorCode::kInvalidArgument, "unknown output '{}': this model has outputs {}", o.name,
           fmt::join(known, ", "));
  return body.outputs;
}

}  // namespace

KServeModelMetadata kserve_model_metadata(const std::string& name) {
  return {name,
          {kModelVersion},
          kKServePlatform,
          {{kAudioInput, "BYTES", {1}}},
          {{"text", "BYTES", {1}}, {"words", "BYTES", {-1}}, {"word_timestamps", "FP32", {-1, 2}}}};
}

const std::vector<std::string>& kserve_output_names() {
  static const std::vector<std::string> names = {"text", "words", "word_timestamps"};
  return names;
}

bool is_served_version(std::string_view version) { return version.empty() || version == kModelVersion; }

PreparedInference prepare_inference(const InferRequestBody& body) {
  PreparedInference p;
  p.outputs = wanted_outputs(body);  // before the audio: a typo in an output name costs no decoding
  if (const auto priority = number_param(body.parameters, "priority")) {
    if (*priority < 0 || *priority != std::floor(*priority) || *priority > 1e9)
      fail(ErrorCode::kInvalidArgument,
           "parameter 'priority' must be a non-negative integer (1 is the highest; 0 the default)");
    p.priority = static_cast<int>(*priority);
  }
  if (const auto timeout_us = number_param(body.parameters, "timeout")) {
    if (!(*timeout_us > 0))
      fail(ErrorCode::kInvalidArgument, "parameter 'timeout' must be a positive number of microseconds");
    p.timeout = std::chrono::microseconds(static_cast<int64_t>(std::min(*timeout_us, 1e15)));
  }
  p.audio = input_audio(body);
  return p;
}

std::vector<OutputTensor> make_outputs(const asr::Transcript& t, const std::vector<RequestedOutput>& wanted) {
  std::vector<OutputTensor> out;
  for (const auto& w : wanted) {
    OutputTensor o;
    o.name = w.name;
    o.binary = w.binary;
    const int64_t n = static_cast<int64_t>(t.words.size());
    if (w.name == "text") {
      o.datatype = "BYTES";
      o.shape = {1};
      o.bytes = {t.text};
    } else if (w.name == "words") {
      o.datatype = "BYTES";
      o.shape = {n};
      for (const auto& word : t.words) o.bytes.push_back(word.text);
    } else {
      o.datatype = "FP32";
      o.shape = {n, 2};
      for (const auto& word : t.words) {
        o.fp32.push_back(static_cast<float>(word.start));
        o.fp32.push_back(static_cast<float>(word.end));
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace steno::serve
