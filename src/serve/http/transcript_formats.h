// The OpenAI transcription response formats, rendered from a steno transcript.
//   json          {"text"}
//   text          the text and a newline
//   srt, vtt      one cue per segment (SubRip / WebVTT)
//   verbose_json  {task, language, duration, text, segments[...], words[...]}, segments and words on request
// json and verbose_json add "warnings": [...] when the audio was odd although it was served (it ended early).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steno/asr/transcript.h"

namespace steno::serve::http {

enum class ResponseFormat { kJson, kText, kSrt, kVtt, kVerboseJson };

std::optional<ResponseFormat> parse_response_format(std::string_view name);

struct RenderedBody {
  std::string body;
  std::string content_type;
};

struct VerboseContent {
  bool segments = true;
  bool words = false;
};

// `audio_seconds` is the length of the audio the client sent (verbose_json's "duration"). `warnings` (audio that
// ended early, ...) become a "warnings" array in json and verbose_json; the other formats carry them in headers.
RenderedBody render_transcript(const asr::Transcript& transcript, ResponseFormat format, double audio_seconds,
                               VerboseContent verbose = {}, const std::vector<std::string>& warnings = {});

// "HH:MM:SS,mmm" (SubRip, sep ',') or "HH:MM:SS.mmm" (WebVTT, sep '.').
std::string format_cue_time(double seconds, char millis_separator);

}  // namespace steno::serve::http
