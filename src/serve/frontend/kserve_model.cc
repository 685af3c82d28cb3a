#include "serve/frontend/kserve_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "serve/frontend/diarization_formats.h"
#include "serve/frontend/speaker_transcript.h"
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

// A boolean parameter (true/false, or the strings "true"/"false"); false when absent.
bool bool_param(const nlohmann::json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end()) return false;
  if (it->is_boolean()) return it->get<bool>();
  if (it->is_string()) {
    const std::string& v = it->get_ref<const std::string&>();
    if (v == "true") return true;
    if (v == "false") return false;
  }
  fail(ErrorCode::kInvalidArgument, "parameter '{}' must be true or false", key);
}

bool is_diarization(std::string_view task) { return task == "diarization"; }

// Which outputs to return, each binary or not: all of the model's (word_speakers only with diarize) when none
// are named. Unknown names are refused, and word_speakers without diarize.
std::vector<RequestedOutput> wanted_outputs(const InferRequestBody& body, std::string_view task, bool diarize) {
  const std::vector<std::string>& known = kserve_output_names(task);
  if (body.outputs.empty()) {
    std::vector<RequestedOutput> all;
    for (const auto& name : known)
      if (name != "word_speakers" || diarize) all.push_back({name, body.binary_data_output});
    return all;
  }
  for (const auto& o : body.outputs) {
    if (std::find(known.begin(), known.end(), o.name) == known.end())
      fail(ErrorCode::kInvalidArgument, "unknown output '{}': this model has outputs {}", o.name,
           fmt::join(known, ", "));
    if (o.name == "word_speakers" && !diarize)
      fail(ErrorCode::kInvalidArgument, "output 'word_speakers' needs the request parameter 'diarize': true");
  }
  return body.outputs;
}

OutputTensor bytes_output(const RequestedOutput& w, std::vector<std::string> values, std::vector<int64_t> shape) {
  OutputTensor o;
  o.name = w.name;
  o.binary = w.binary;
  o.datatype = "BYTES";
  o.shape = std::move(shape);
  o.bytes = std::move(values);
  return o;
}

}  // namespace

KServeModelMetadata kserve_model_metadata(const std::string& name, std::string_view task) {
  if (is_diarization(task))
    return {name,
            {kModelVersion},
            kKServeDiarizerPlatform,
            {{kAudioInput, "BYTES", {1}}},
            {{"segments", "BYTES", {1}}, {"rttm", "BYTES", {1}}}};
  return {name,
          {kModelVersion},
          kKServePlatform,
          {{kAudioInput, "BYTES", {1}}},
          {{"text", "BYTES", {1}},
           {"words", "BYTES", {-1}},
           {"word_timestamps", "FP32", {-1, 2}},
           {"word_speakers", "BYTES", {-1}}}};
}

const std::vector<std::string>& kserve_output_names(std::string_view task) {
  static const std::vector<std::string> transcription = {"text", "words", "word_timestamps", "word_speakers"};
  static const std::vector<std::string> diarization = {"segments", "rttm"};
  return is_diarization(task) ? diarization : transcription;
}

bool is_served_version(std::string_view version) { return version.empty() || version == kModelVersion; }

PreparedInference prepare_inference(const InferRequestBody& body, std::string_view task) {
  PreparedInference p;
  p.diarize = bool_param(body.parameters, "diarize");
  if (p.diarize && is_diarization(task))
    fail(ErrorCode::kInvalidArgument,
         "parameter 'diarize' is for transcription models: a diarization model's answer is who spoke already");
  p.outputs = wanted_outputs(body, task, p.diarize);  // before the audio: a typo in an output name costs no decoding
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

std::vector<OutputTensor> make_outputs(const TranscriptionResponse& answer,
                                       const std::vector<RequestedOutput>& wanted, std::string_view task,
                                       const std::string& file_id) {
  std::vector<OutputTensor> out;
  if (is_diarization(task)) {
    static const DiarizationResult none;
    const DiarizationResult& d = answer.diarization ? *answer.diarization : none;
    for (const auto& w : wanted)
      out.push_back(bytes_output(
          w, {w.name == "rttm" ? diarization_rttm(d, file_id) : diarization_json(d, answer.audio_seconds)}, {1}));
    return out;
  }
  const asr::Transcript& t = answer.transcript;
  const int64_t n = static_cast<int64_t>(t.words.size());
  for (const auto& w : wanted) {
    if (w.name == "text") {
      out.push_back(bytes_output(w, {t.text}, {1}));
    } else if (w.name == "words") {
      std::vector<std::string> words;
      for (const auto& word : t.words) words.push_back(word.text);
      out.push_back(bytes_output(w, std::move(words), {n}));
    } else if (w.name == "word_speakers") {
      // The turns hold every word in order; each word gets its turn's speaker's label.
      const SpeakerTranscript who = speaker_transcript(answer);
      std::vector<std::string> speakers;
      for (const auto& turn : who.turns)
        for (size_t i = 0; i < turn.words.size(); ++i) speakers.push_back(who.label(turn.speaker));
      if (static_cast<int64_t>(speakers.size()) != n)
        fail(ErrorCode::kInternal, "{} words but {} speakers of words", n, speakers.size());
      out.push_back(bytes_output(w, std::move(speakers), {n}));
    } else {
      OutputTensor o;
      o.name = w.name;
      o.binary = w.binary;
      o.datatype = "FP32";
      o.shape = {n, 2};
      for (const auto& word : t.words) {
        o.fp32.push_back(static_cast<float>(word.start));
        o.fp32.push_back(static_cast<float>(word.end));
      }
      out.push_back(std::move(o));
    }
  }
  return out;
}

}  // namespace steno::serve
