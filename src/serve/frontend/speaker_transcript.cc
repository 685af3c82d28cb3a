#include "serve/frontend/speaker_transcript.h"

#include "steno/core/error.h"
#include "steno/diar/diarize.h"

namespace steno::serve {

SpeakerTranscript speaker_transcript(const TranscriptionResponse& response, std::span<const std::string> known_names) {
  if (!response.diarization) fail(ErrorCode::kInternal, "a speaker-attributed answer without its diarization");
  const DiarizationResult& d = *response.diarization;
  SpeakerTranscript out;
  out.turns = diar::speaker_transcript(response.transcript, d.probs, d.frames, d.num_speakers, d.frame_seconds);
  size_t named = 0;
  for (const diar::SpeakerTurn& turn : out.turns)
    if (!out.labels.contains(turn.speaker))
      out.labels[turn.speaker] = named < known_names.size() ? known_names[named++] : diar::speaker_label(turn.speaker);
  return out;
}

}  // namespace steno::serve
