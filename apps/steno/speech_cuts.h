// `--vad`: each decoded file cut to its speech before transcription (vad/speech_audio.h), when the mode applies to
// its length; the transcript's times are moved back afterwards.
#pragma once

#include <optional>
#include <vector>

#include "audio_files.h"
#include "steno/vad/speech_audio.h"
#include "steno/vad/vad.h"

namespace steno::cli {

// One entry per file: nullopt where the file is transcribed whole (VAD off, too short for auto, not decoded).
// Loads the bundled VAD model only when some file needs it.
std::vector<std::optional<vad::SpeechAudio>> cut_to_speech(const std::vector<InputFile>& files, vad::VadMode mode,
                                                           int sample_rate);

}  // namespace steno::cli
