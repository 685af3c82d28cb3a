#include "serve/diarization_gate.h"

#include <algorithm>
#include <cmath>

#include "serve/request.h"

namespace steno::serve {

namespace {

DiarizationGate::Speech ready(std::optional<std::vector<vad::SampleRange>> speech) {
  std::promise<std::optional<std::vector<vad::SampleRange>>> p;
  p.set_value(std::move(speech));
  return p.get_future().share();
}

}  // namespace

DiarizationGate::DiarizationGate(std::span<const float> pcm, Speech speech)
    : peaks_((pcm.size() + kEnvelopeSamples - 1) / kEnvelopeSamples, 0.0f), speech_(std::move(speech)) {
  for (size_t b = 0; b < peaks_.size(); ++b) {  // block by block: one vectorised pass, on every request's thread
    const size_t end = std::min(pcm.size(), (b + 1) * kEnvelopeSamples);
    float peak = 0.0f;
    for (size_t i = b * kEnvelopeSamples; i < end; ++i) peak = std::max(peak, std::abs(pcm[i]));
    peaks_[b] = peak;
  }
}

DiarizationGate::DiarizationGate(std::span<const float> pcm, std::optional<std::vector<vad::SampleRange>> speech)
    : DiarizationGate(pcm, ready(std::move(speech))) {}

bool DiarizationGate::silent(double start_s, double end_s) const {
  const double per_second = static_cast<double>(kPcmSampleRate) / kEnvelopeSamples;
  const auto from = static_cast<size_t>(std::max(0.0, std::floor(start_s * per_second)));
  const auto to = std::min(peaks_.size(), static_cast<size_t>(std::max(0.0, std::ceil(end_s * per_second))));
  for (size_t i = from; i < to; ++i)
    if (peaks_[i] >= static_cast<float>(kSilentPeak)) return false;  // as asr::is_silent
  return true;
}

void DiarizationGate::apply(DiarizationResult& d) const {
  const std::optional<std::vector<vad::SampleRange>>& speech = speech_.get();  // waits for the VAD, if it runs
  std::vector<SpeakerSegmentResult> kept;
  for (const SpeakerSegmentResult& s : d.segments) {
    if (!speech) {
      if (!silent(s.start, s.end)) kept.push_back(s);
      continue;
    }
    for (const vad::SampleRange& r : *speech) {  // the segment's parts inside speech
      const double start = std::max(s.start, static_cast<double>(r.begin) / kPcmSampleRate);
      const double end = std::min(s.end, static_cast<double>(r.end) / kPcmSampleRate);
      if (end > start && !silent(start, end)) kept.push_back({s.speaker, start, end});
    }
  }
  d.segments = std::move(kept);
}

AnswerFn gated(AnswerFn done, std::shared_ptr<const DiarizationGate> gate) {
  return [done = std::move(done), gate = std::move(gate)](TranscriptionResponse r) {
    if (r.ok() && r.diarization) gate->apply(*r.diarization);
    done(std::move(r));
  };
}

}  // namespace steno::serve
