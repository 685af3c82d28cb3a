// The form of POST /v1/audio/transcriptions (OpenAI's fields, and NeMo-Speech.cpp's `diarize`), read and checked
// before any audio is decoded: everything steno cannot honour is a 400 naming the field (docs/http-api.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "serve/http/message.h"
#include "serve/http/multipart.h"
#include "transcript_formats.h"

namespace steno::serve::http {

// Up to this many known_speaker_names[]: OpenAI's limit, and the outputs of a Sortformer diarizer.
inline constexpr size_t kMaxKnownSpeakers = 4;

struct TranscriptionForm {
  const MultipartPart* file = nullptr;
  std::string model;
  ResponseFormat format = ResponseFormat::kJson;
  VerboseContent verbose;
  // Who spoke too: diarized_json, or verbose_json with diarize=true. The diarizer then runs beside the ASR model.
  bool speakers = false;
  std::string speakers_param;  // the field that asked for them ("response_format", "diarize"), for errors
  std::vector<std::string> speaker_names;  // known_speaker_names[], given to speakers in the order they first speak
  bool stream = false;  // stream=true: server-sent events (transcript_formats.h, render_transcript_events)
};

TranscriptionForm read_transcription_form(const std::vector<MultipartPart>& parts);

// A form field's value, trimmed ("" when absent), and whether it is present.
std::string form_field(const std::vector<MultipartPart>& parts, std::string_view name);
bool has_form_field(const std::vector<MultipartPart>& parts, std::string_view name);
// A 400 for a form field steno cannot honour (code invalid_value).
HttpError bad_field(const std::string& param, std::string message);

}  // namespace steno::serve::http
