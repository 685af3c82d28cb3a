// A diarization answer as text, the same whichever protocol carries it: the JSON of `steno diarize -f json` and
// POST /v1/audio/diarizations (duration, the speakers heard, segments), and RTTM lines. KServe returns them as its
// diarizer's `segments` and `rttm` outputs.
#pragma once

#include <string>

#include "steno/serve/service.h"

namespace steno::serve {

// {"duration": s, "speakers": ["speaker_0", ...], "segments": [{"speaker", "start", "end"}, ...]}; times in
// seconds rounded to the millisecond.
std::string diarization_json(const DiarizationResult& d, double audio_seconds);

// One "SPEAKER <file_id> 1 <start> <duration> <NA> <NA> <speaker> <NA> <NA>" line per segment.
std::string diarization_rttm(const DiarizationResult& d, const std::string& file_id);

}  // namespace steno::serve
