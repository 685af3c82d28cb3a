#include "speech_cuts.h"

#include <memory>

#include "steno/core/error.h"

namespace steno::cli {

std::vector<std::optional<vad::SpeechAudio>> cut_to_speech(const std::vector<InputFile>& files, vad::VadMode mode,
                                                           int sample_rate) {
  std::vector<std::optional<vad::SpeechAudio>> out(files.size());
  std::unique_ptr<vad::SpeechDetector> detector;
  for (size_t i = 0; i < files.size(); ++i) {
    const InputFile& f = files[i];
    if (!f.error.empty() || !vad::vad_applies(mode, static_cast<double>(f.samples.size()) / sample_rate)) continue;
    STENO_CHECK(sample_rate == vad::SileroVad::kSampleRate, "--vad needs a {} Hz model, this one takes {} Hz",
                vad::SileroVad::kSampleRate, sample_rate);
    if (!detector) detector = std::make_unique<vad::SpeechDetector>(vad::default_vad_dir());
    out[i] = vad::cut_speech(f.samples, detector->regions(f.samples));
  }
  return out;
}

}  // namespace steno::cli
