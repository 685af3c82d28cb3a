// Who said what, from an answer that carries both a transcript and a diarization (Submission::diarizer): the
// words joined to speakers and grouped into turns by the rule and code of `steno transcribe --diarize`
// (diar/speaker_attribution.h), and the label every speaker is shown with. Free of any wire format: each front end
// renders it in its protocol's shape.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "steno/diar/speaker_attribution.h"
#include "steno/serve/service.h"

namespace steno::serve {

struct SpeakerTranscript {
  std::vector<diar::SpeakerTurn> turns;  // in time order; each turn's words carry its speaker
  std::map<int, std::string> labels;     // every speaker of a turn -> its label

  const std::string& label(int speaker) const { return labels.at(speaker); }
};

// `known_names` go to the speakers in the order they first speak in the transcript (the first turn's speaker gets
// the first name); speakers beyond them keep steno's labels ("speaker_2"). Throws kInternal when the response
// lacks its diarization (a steno bug: the front end asked for one).
SpeakerTranscript speaker_transcript(const TranscriptionResponse& response,
                                     std::span<const std::string> known_names = {});

}  // namespace steno::serve
