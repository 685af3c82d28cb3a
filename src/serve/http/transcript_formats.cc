#include "transcript_formats.h"

#include "errors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace steno::serve::http {
namespace {

constexpr const char* kText = "text/plain; charset=utf-8";

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

// Cues for srt/vtt: the transcript's segments; a transcript with text but no segments becomes one cue.
std::vector<asr::TimedText> cues(const asr::Transcript& t, double audio_seconds) {
  if (!t.segments.empty()) return t.segments;
  if (t.text.empty()) return {};
  return {asr::TimedText{t.text, 0.0, audio_seconds}};
}

double round_ms(double s) { return std::round(s * 1000.0) / 1000.0; }

// A verbose_json segment: the field set of OpenAI's TranscriptionSegment. steno's greedy TDT decoder has no
// sampling temperature, log-probabilities or no-speech estimate: those are reported as 0 (docs/http-api.md).
nlohmann::json verbose_segment(int id, double start, double end, const std::string& text) {
  return {{"id", id},
          {"seek", 0},
          {"start", round_ms(start)},
          {"end", round_ms(end)},
          {"text", text},
          {"tokens", nlohmann::json::array()},
          {"temperature", 0.0},
          {"avg_logprob", 0.0},
          {"compression_ratio", 0.0},
          {"no_speech_prob", 0.0}};
}

nlohmann::json usage(double audio_seconds) { return {{"type", "duration"}, {"seconds", round_ms(audio_seconds)}}; }

// verbose_json's segments and words; with speakers, the segments are the speaker turns and every word (and
// segment) has its speaker's label.
void add_verbose_content(nlohmann::json& doc, const asr::Transcript& t, double audio_seconds, VerboseContent verbose,
                         const SpeakerTranscript* speakers) {
  if (verbose.segments) {
    nlohmann::json segments = nlohmann::json::array();
    int id = 0;
    if (speakers) {
      for (const diar::SpeakerTurn& turn : speakers->turns) {
        segments.push_back(verbose_segment(id++, turn.start, turn.end, turn.text));
        segments.back()["speaker"] = speakers->label(turn.speaker);
      }
    } else {
      for (const auto& s : cues(t, audio_seconds)) segments.push_back(verbose_segment(id++, s.start, s.end, s.text));
    }
    doc["segments"] = std::move(segments);
  }
  if (verbose.words) {
    nlohmann::json words = nlohmann::json::array();
    if (speakers) {
      for (const diar::SpeakerTurn& turn : speakers->turns)
        for (const diar::SpeakerWord& w : turn.words)
          words.push_back({{"word", w.text},
                           {"start", round_ms(w.start)},
                           {"end", round_ms(w.end)},
                           {"speaker", speakers->label(w.speaker)}});
    } else {
      for (const auto& w : t.words)
        words.push_back({{"word", w.text}, {"start", round_ms(w.start)}, {"end", round_ms(w.end)}});
    }
    doc["words"] = std::move(words);
  }
}

// The SDK's TranscriptionDiarized: one segment per speaker turn (consecutive words of one speaker, broken by a
// pause over 1 s), typed and identified as OpenAI's are.
// Turn i of `speakers` as the SDK's TranscriptionTextSegmentEvent (diarized_json's segments are these).
nlohmann::json diarized_segment(const SpeakerTranscript& speakers, size_t i) {
  const diar::SpeakerTurn& turn = speakers.turns[i];
  return {{"type", "transcript.text.segment"},
          {"id", fmt::format("seg_{}", i)},
          {"start", round_ms(turn.start)},
          {"end", round_ms(turn.end)},
          {"text", turn.text},
          {"speaker", speakers.label(turn.speaker)}};
}

nlohmann::json diarized_json(const asr::Transcript& t, double audio_seconds, const SpeakerTranscript& speakers) {
  nlohmann::json segments = nlohmann::json::array();
  for (size_t i = 0; i < speakers.turns.size(); ++i) segments.push_back(diarized_segment(speakers, i));
  return {{"task", "transcribe"},
          {"duration", round_ms(audio_seconds)},
          {"text", t.text},
          {"segments", std::move(segments)},
          {"usage", usage(audio_seconds)}};
}

}  // namespace

std::optional<ResponseFormat> parse_response_format(std::string_view name) {
  if (name.empty() || name == "json") return ResponseFormat::kJson;
  if (name == "text") return ResponseFormat::kText;
  if (name == "srt") return ResponseFormat::kSrt;
  if (name == "vtt") return ResponseFormat::kVtt;
  if (name == "verbose_json") return ResponseFormat::kVerboseJson;
  if (name == "diarized_json") return ResponseFormat::kDiarizedJson;
  return std::nullopt;
}

const char* response_format_name(ResponseFormat format) {
  switch (format) {
    case ResponseFormat::kJson: return "json";
    case ResponseFormat::kText: return "text";
    case ResponseFormat::kSrt: return "srt";
    case ResponseFormat::kVtt: return "vtt";
    case ResponseFormat::kVerboseJson: return "verbose_json";
    case ResponseFormat::kDiarizedJson: return "diarized_json";
  }
  return "json";
}

std::string format_cue_time(double seconds, char millis_separator) {
  const long long total_ms = std::llround(std::max(0.0, seconds) * 1000.0);
  return fmt::format("{:02}:{:02}:{:02}{}{:03}", total_ms / 3'600'000, total_ms / 60'000 % 60, total_ms / 1000 % 60,
                     millis_separator, total_ms % 1000);
}

RenderedBody render_transcript(const asr::Transcript& t, ResponseFormat format, double audio_seconds,
                               VerboseContent verbose, const std::vector<std::string>& warnings,
                               const SpeakerTranscript* speakers) {
  switch (format) {
    case ResponseFormat::kJson: {
      nlohmann::json doc = {{"text", t.text}};
      if (!warnings.empty()) doc["warnings"] = warnings;
      return {dump(doc), "application/json"};
    }
    case ResponseFormat::kText:
      return {t.text + "\n", kText};
    case ResponseFormat::kSrt: {
      std::string out;
      int index = 1;
      for (const auto& c : cues(t, audio_seconds))
        out += fmt::format("{}\n{} --> {}\n{}\n\n", index++, format_cue_time(c.start, ','),
                           format_cue_time(c.end, ','), c.text);
      return {out, kText};
    }
    case ResponseFormat::kVtt: {
      std::string out = "WEBVTT\n\n";
      for (const auto& c : cues(t, audio_seconds))
        out += fmt::format("{} --> {}\n{}\n\n", format_cue_time(c.start, '.'), format_cue_time(c.end, '.'), c.text);
      return {out, kText};
    }
    case ResponseFormat::kVerboseJson: {
      nlohmann::json doc = {{"task", "transcribe"},
                            {"language", "english"},
                            {"duration", round_ms(audio_seconds)},
                            {"text", t.text}};
      add_verbose_content(doc, t, audio_seconds, verbose, speakers);
      doc["usage"] = usage(audio_seconds);
      if (!warnings.empty()) doc["warnings"] = warnings;
      return {dump(doc), "application/json"};
    }
    case ResponseFormat::kDiarizedJson: {
      if (!speakers) throw std::logic_error("diarized_json rendered without its speakers");
      nlohmann::json doc = diarized_json(t, audio_seconds, *speakers);
      if (!warnings.empty()) doc["warnings"] = warnings;
      return {dump(doc), "application/json"};
    }
  }
  return {dump({{"text", t.text}}), "application/json"};
}

namespace {
std::string event(const nlohmann::json& e) { return "data: " + dump(e) + "\n\n"; }
}  // namespace

std::string transcript_delta_events(const std::vector<asr::TimedText>& words, bool first) {
  std::string out;
  for (const asr::TimedText& w : words) {
    out += event({{"type", "transcript.text.delta"}, {"delta", first ? w.text : " " + w.text}});
    first = false;
  }
  return out;
}

std::string transcript_done_event(const std::string& text) {
  return event({{"type", "transcript.text.done"}, {"text", text}});
}

std::string transcript_error_event(const HttpError& error) {
  nlohmann::json e = nlohmann::json::parse(error_response(ApiStyle::kOpenAI, error).body);
  e["type"] = "error";
  return event(e);
}

RenderedBody render_transcript_events(const asr::Transcript& t, const SpeakerTranscript* speakers) {
  std::string out;
  const auto emit = [&](const nlohmann::json& event) { out += "data: " + dump(event) + "\n\n"; };
  bool first = true;
  const auto delta = [&](const std::string& word, const std::string* segment_id) {
    nlohmann::json event = {{"type", "transcript.text.delta"}, {"delta", first ? word : " " + word}};
    if (segment_id) event["segment_id"] = *segment_id;
    emit(event);
    first = false;
  };
  if (speakers) {
    for (size_t i = 0; i < speakers->turns.size(); ++i) {
      const std::string id = fmt::format("seg_{}", i);
      for (const diar::SpeakerWord& w : speakers->turns[i].words) delta(w.text, &id);
      emit(diarized_segment(*speakers, i));
    }
  } else {
    for (const auto& w : t.words) delta(w.text, nullptr);
  }
  emit({{"type", "transcript.text.done"}, {"text", t.text}});
  return {out, "text/event-stream"};
}

}  // namespace steno::serve::http
