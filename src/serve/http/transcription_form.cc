#include "transcription_form.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "header_value.h"

namespace steno::serve::http {
namespace {

// A whole field as a finite number, or nullopt.
std::optional<double> number(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "true"/"false" (any case) or 1/0; anything else is a 400, never a silent false.
bool boolean_field(const std::string& name, const std::string& text) {
  const std::string v = to_lower(text);
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0" || v.empty()) return false;
  throw bad_field(name, fmt::format("{} '{}' is not true or false", name, text.substr(0, 64)));
}

// chunking_strategy as OpenAI takes it: "auto", or a server_vad object, which the SDKs send as bracketed fields
// (chunking_strategy[type]=server_vad, chunking_strategy[threshold]=0.5) and other clients as one JSON text.
// Checked as OpenAI checks it, then not used: steno transcribes the whole file as one block either way.
void check_chunking_strategy(const std::vector<MultipartPart>& parts) {
  constexpr std::string_view kName = "chunking_strategy";
  std::map<std::string, std::string> vad;  // the server_vad object's fields, as text
  bool any = false;
  for (const MultipartPart& p : parts) {
    if (p.name.rfind(kName, 0) != 0) continue;
    const std::string_view rest = std::string_view(p.name).substr(kName.size());
    const std::string value(trim(p.data));
    if (rest.empty()) {
      if (value == "auto") return;
      const nlohmann::json j = nlohmann::json::parse(value, nullptr, false);
      if (!j.is_object())
        throw bad_field(std::string(kName), fmt::format("chunking_strategy '{}' is neither 'auto' nor a server_vad "
                                                        "object",
                                                        value.substr(0, 64)));
      for (const auto& [key, v] : j.items()) vad[key] = v.is_string() ? v.get<std::string>() : v.dump();
      any = true;
    } else if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']') {
      vad[std::string(rest.substr(1, rest.size() - 2))] = value;
      any = true;
    }
  }
  if (!any) return;
  const std::string param(kName);
  if (vad["type"] != "server_vad")
    throw bad_field(param, fmt::format("chunking_strategy's type '{}' is not server_vad", vad["type"].substr(0, 64)));
  for (const auto& [key, text] : vad) {
    if (key == "type") continue;
    const std::optional<double> v = number(text);
    if (key == "prefix_padding_ms" || key == "silence_duration_ms") {
      if (!v || *v < 0 || *v != std::floor(*v))
        throw bad_field(param, fmt::format("chunking_strategy's {} '{}' is not a whole number of milliseconds >= 0",
                                           key, text.substr(0, 64)));
    } else if (key == "threshold") {
      if (!v || *v < 0 || *v > 1)
        throw bad_field(param, fmt::format("chunking_strategy's threshold '{}' is not a number between 0 and 1",
                                           text.substr(0, 64)));
    } else {
      throw bad_field(param, fmt::format("chunking_strategy has no field '{}' (server_vad takes type, "
                                         "prefix_padding_ms, silence_duration_ms, threshold)",
                                         key.substr(0, 64)));
    }
  }
}

// known_speaker_names[]: short, distinct labels, at most kMaxKnownSpeakers. steno's own labels (speaker_N) are
// refused as names: they label the speakers beyond the list, and one label must never mean two speakers.
std::vector<std::string> known_speaker_names(const std::vector<MultipartPart>& parts) {
  const std::string param = "known_speaker_names[]";
  std::vector<std::string> names;
  for (const MultipartPart& p : parts) {
    if (p.name != "known_speaker_names[]" && p.name != "known_speaker_names") continue;
    std::string name(trim(p.data));
    if (name.empty()) throw bad_field(param, "known_speaker_names[] holds an empty name");
    if (name.size() > 128) throw bad_field(param, "a known speaker name is longer than 128 bytes");
    if (name.rfind("speaker_", 0) == 0 && name.size() > 8 &&
        std::all_of(name.begin() + 8, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw bad_field(param, fmt::format("'{}' is steno's own label for an unnamed speaker; choose another name",
                                         name));
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw bad_field(param, fmt::format("known_speaker_names[] names '{}' twice", name));
    names.push_back(std::move(name));
  }
  if (names.size() > kMaxKnownSpeakers)
    throw bad_field(param, fmt::format("{} known speaker names; at most {} are supported", names.size(),
                                       kMaxKnownSpeakers));
  return names;
}

// Speakers: asked by diarized_json, or by diarize=true (NeMo-Speech.cpp's field; `diarization` also taken) with
// verbose_json, the one other format with a place for them.
void read_speakers(const std::vector<MultipartPart>& parts, TranscriptionForm& form) {
  for (const char* name : {"diarize", "diarization"}) {
    if (!has_form_field(parts, name) || !boolean_field(name, form_field(parts, name))) continue;
    if (form.format != ResponseFormat::kVerboseJson && form.format != ResponseFormat::kDiarizedJson)
      throw bad_field(name, fmt::format("{}=true puts a speaker on every word and segment of verbose_json; "
                                        "response_format '{}' has no place for them (use verbose_json, or "
                                        "diarized_json for speaker segments)",
                                        name, response_format_name(form.format)));
    form.speakers = true;
    form.speakers_param = name;
  }
  if (form.format == ResponseFormat::kDiarizedJson) {
    form.speakers = true;
    form.speakers_param = "response_format";
  }
  form.speaker_names = known_speaker_names(parts);
  if (!form.speaker_names.empty() && !form.speakers)
    throw bad_field("known_speaker_names[]", "known_speaker_names[] labels speakers, and this request asks for "
                                             "none: use response_format=diarized_json (or verbose_json with "
                                             "diarize=true)");
  // OpenAI matches voices to these clips; Sortformer has no voice matching, and names given by arrival order
  // instead would label speakers wrongly without a word: refused, saying what steno does instead.
  if (has_form_field(parts, "known_speaker_references[]") || has_form_field(parts, "known_speaker_references"))
    throw bad_field("known_speaker_references[]",
                    "known_speaker_references[] is not supported: steno's diarizer cannot match voices to reference "
                    "recordings. Send known_speaker_names[] alone: steno gives the names to the speakers in the "
                    "order they first speak");
}

}  // namespace

std::string form_field(const std::vector<MultipartPart>& parts, std::string_view name) {
  const MultipartPart* p = find_part(parts, name);
  return p ? std::string(trim(p->data)) : std::string();
}

bool has_form_field(const std::vector<MultipartPart>& parts, std::string_view name) {
  return find_part(parts, name) != nullptr;
}

HttpError bad_field(const std::string& param, std::string message) {
  return HttpError(400, std::move(message), param, "invalid_value");
}

TranscriptionForm read_transcription_form(const std::vector<MultipartPart>& parts) {
  TranscriptionForm form;
  form.file = find_part(parts, "file");
  if (!form.file)
    throw HttpError(400, "missing required field 'file': send the audio as a multipart file field named 'file'",
                    "file", "missing_field");
  form.model = form_field(parts, "model");  // resolved by the service: a served name, an alias, or "" (the default)

  if (const std::string language = to_lower(form_field(parts, "language")); !language.empty() && language != "en")
    throw bad_field("language", fmt::format("language '{}' is not supported: steno's model transcribes English "
                                            "only (use 'en' or omit the field)",
                                            language));
  // `prompt` is accepted and ignored: a transducer has no text context to prime (docs/http-api.md).

  const std::string format_name = form_field(parts, "response_format");
  const auto format = parse_response_format(format_name);
  if (!format)
    throw bad_field("response_format", fmt::format("response_format '{}' is not one of json, text, srt, vtt, "
                                                   "verbose_json, diarized_json",
                                                   format_name));
  form.format = *format;

  bool any_granularity = false;
  form.verbose = VerboseContent{false, false};
  for (const auto& p : parts) {
    if (p.name != "timestamp_granularities[]" && p.name != "timestamp_granularities") continue;
    any_granularity = true;
    const std::string_view g = trim(p.data);
    if (g == "word") {
      form.verbose.words = true;
    } else if (g == "segment") {
      form.verbose.segments = true;
    } else {
      throw bad_field("timestamp_granularities[]",
                      fmt::format("timestamp granularity '{}' is not one of word, segment", g));
    }
  }
  if (!any_granularity) form.verbose.segments = true;  // OpenAI's default granularity
  if (any_granularity && form.format == ResponseFormat::kDiarizedJson)
    throw bad_field("timestamp_granularities[]",
                    "timestamp_granularities[] does not apply to diarized_json: its segments always carry start and "
                    "end, and it has no words (for words with speakers use verbose_json with diarize=true)");
  if (any_granularity && form.format != ResponseFormat::kVerboseJson)
    throw bad_field("timestamp_granularities[]", "timestamp_granularities[] requires response_format=verbose_json");

  if (has_form_field(parts, "temperature")) {
    const std::string text = form_field(parts, "temperature");
    const std::optional<double> t = number(text);
    if (!t || !(*t >= 0 && *t <= 1))
      throw bad_field("temperature", fmt::format("temperature '{}' is not a number between 0 and 1", text));
    if (*t > 0)
      throw bad_field("temperature", fmt::format("temperature {} is not supported: steno decodes greedily, so only "
                                                 "temperature 0 is honoured",
                                                 text));
  }
  form.stream = boolean_field("stream", form_field(parts, "stream"));
  if (form.stream && form.format != ResponseFormat::kJson && form.format != ResponseFormat::kText &&
      form.format != ResponseFormat::kDiarizedJson)
    throw bad_field("stream", fmt::format("stream=true answers with server-sent events for response_format json, "
                                          "text or diarized_json; '{}' is a whole document (omit stream)",
                                          response_format_name(form.format)));
  if (has_form_field(parts, "include[]") || has_form_field(parts, "include"))
    throw bad_field("include[]", "include[] (logprobs) is not supported: steno does not report log-probabilities");
  read_speakers(parts, form);
  check_chunking_strategy(parts);
  return form;
}

}  // namespace steno::serve::http
