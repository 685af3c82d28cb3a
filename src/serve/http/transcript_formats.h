// The OpenAI transcription response formats, rendered from a steno transcript.
//   json          {"text"}
//   text          the text and a newline
//   srt, vtt      one cue per segment (SubRip / WebVTT)
//   verbose_json  {task, language, duration, text, segments[...], words[...]}, segments and words on request; with
//                 speakers (diarize=true) every word has a `speaker` and the segments are speaker turns
//   diarized_json {task, duration, text, segments[{type, id, start, end, text, speaker}], usage}: the SDK's
//                 TranscriptionDiarized, one segment per speaker turn
//   stream=true   json, text and diarized_json as server-sent events (render_transcript_events)
// json, verbose_json and diarized_json add "warnings": [...] when the audio was odd although it was served (it
// ended early).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/frontend/speaker_transcript.h"
#include "serve/http/message.h"
#include "steno/asr/transcript.h"

namespace steno::serve::http {

enum class ResponseFormat { kJson, kText, kSrt, kVtt, kVerboseJson, kDiarizedJson };

std::optional<ResponseFormat> parse_response_format(std::string_view name);  // "" is json
const char* response_format_name(ResponseFormat format);

struct RenderedBody {
  std::string body;
  std::string content_type;
};

struct VerboseContent {
  bool segments = true;
  bool words = false;
};

// `audio_seconds` is the length of the audio the client sent (verbose_json's "duration"). `warnings` (audio that
// ended early, ...) become a "warnings" array in the JSON formats; the other formats carry them in headers.
// `speakers` is who said what (required by diarized_json; with verbose_json, speakers on words and segments), null
// for none.
RenderedBody render_transcript(const asr::Transcript& transcript, ResponseFormat format, double audio_seconds,
                               VerboseContent verbose = {}, const std::vector<std::string>& warnings = {},
                               const SpeakerTranscript* speakers = nullptr);

// stream=true: the transcript as OpenAI's streamed transcription events, server-sent (text/event-stream; each
// `data: <event JSON>` and a blank line): transcript.text.delta a word at a time (the deltas joined are the text),
// with `speakers` (diarized_json) each word's delta tied to its speaker segment by segment_id and every
// transcript.text.segment (diarized_json's segment) after its words; then transcript.text.done with the text. This
// renders them all at once (speakers are known once the whole recording is diarized); without speakers the
// OpenAI handler sends them as the words are made, with the three below.
RenderedBody render_transcript_events(const asr::Transcript& transcript, const SpeakerTranscript* speakers = nullptr);

// One transcript.text.delta event per word; the stream's first word (`first`) without a leading space.
std::string transcript_delta_events(const std::vector<asr::TimedText>& words, bool first);
std::string transcript_done_event(const std::string& text);
// A failure after the stream began (its status is gone): an `error` event with OpenAI's error object.
std::string transcript_error_event(const HttpError& error);

// "HH:MM:SS,mmm" (SubRip, sep ',') or "HH:MM:SS.mmm" (WebVTT, sep '.').
std::string format_cue_time(double seconds, char millis_separator);

}  // namespace steno::serve::http
