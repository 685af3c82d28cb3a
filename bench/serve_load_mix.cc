#include "serve_load_mix.h"

#include <algorithm>
#include <cmath>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "mix_workload.h"
#include "steno/audio/decode.h"

namespace serve_load {

namespace mix = steno::bench_workload;

namespace {

std::vector<float> cut_clip(const std::vector<float>& stream, int index, int64_t samples) {
  const auto size = static_cast<int64_t>(stream.size());
  const int64_t start = mix::clip_start(index, size, steno::audio::kSampleRate);
  std::vector<float> out(static_cast<size_t>(samples));
  for (int64_t k = 0; k < samples; ++k) out[static_cast<size_t>(k)] = stream[static_cast<size_t>((start + k) % size)];
  return out;
}

// One clip's reference on `socket`; false (and `error`) when it got no 200 with JSON {"text"}.
bool fetch_reference(tcp::socket& socket, const tcp::endpoint& ep, MixClip& clip, std::string& error) {
  if (!socket.is_open() && !connect_to(socket, ep, error)) return false;
  const ReferenceText answer = reference_text(socket, clip.request);
  if (!answer.answered) {
    error = answer.error;
    return false;
  }
  clip.reference = answer.text;
  if (!answer.keep_alive) socket.close();
  return true;
}

}  // namespace

// The --testset FLAC clips decoded with steno's audio library and concatenated in name order (as --make-clip reads
// them and cuda_engine_bench's speech_stream() joins them).
std::vector<float> speech_stream(const std::string& testset) {
  std::vector<float> stream;
  for (const auto& file : flac_files(testset + "/audio")) {
    const steno::audio::DecodedAudio a = steno::audio::load_audio_file(file.string());
    stream.insert(stream.end(), a.samples.begin(), a.samples.end());
  }
  if (stream.empty()) throw std::runtime_error("the FLAC clips of " + testset + "/audio hold no samples");
  return stream;
}

// The first `count` clips of the mix, each as a WAV request (references not yet known).
std::vector<MixClip> make_mix_clips(const Options& o, const std::vector<float>& stream, int count) {
  const std::vector<int64_t> lengths = mix::mix_lengths_as_drawn(steno::audio::kSampleRate);
  std::vector<MixClip> clips(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    MixClip& c = clips[static_cast<size_t>(i)];
    c.index = i;
    // --workload fixed: every clip --clip-seconds long (the fairness run's steady short requests), cut the same way.
    c.samples = o.workload == "fixed" ? static_cast<int64_t>(std::llround(o.clip_seconds * steno::audio::kSampleRate))
                                      : lengths[static_cast<size_t>(i)];
    c.seconds = static_cast<double>(c.samples) / steno::audio::kSampleRate;
    const std::string wav = wav_pcm16(cut_clip(stream, i, c.samples), steno::audio::kSampleRate);
    char name[32];
    std::snprintf(name, sizeof name, "mix-%04d.wav", i);
    c.request = transcription_request(o, name, "audio/wav", wav);
  }
  return clips;
}

// Mean and median of lengths in seconds, to show what a set of clips is.
Json lengths_summary(std::vector<int64_t> samples) {
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (int64_t n : samples) sum += static_cast<double>(n);
  const double rate = steno::audio::kSampleRate;
  return {{"clips", samples.size()},
          {"mean_s", sum / static_cast<double>(samples.size()) / rate},
          {"median_s", static_cast<double>(samples[samples.size() / 2]) / rate},
          {"min_s", static_cast<double>(samples.front()) / rate},
          {"max_s", static_cast<double>(samples.back()) / rate},
          {"total_s", sum / rate}};
}

ReferencePass fetch_references(const tcp::endpoint& ep, std::vector<MixClip>& clips) {
  ReferencePass pass;
  net::io_context ioc;
  tcp::socket socket(ioc);
  const auto start = Clock::now();
  for (MixClip& clip : clips) {
    std::string error;
    if (!fetch_reference(socket, ep, clip, error)) {
      pass.ok = false;
      pass.error = "clip " + std::to_string(clip.index) + ": " + error;
      break;
    }
    pass.empty_texts += clip.reference.empty();
  }
  pass.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return pass;
}

Json references_json(const ReferencePass& pass, const std::vector<MixClip>& clips) {
  Json texts = Json::array();
  for (const auto& c : clips)
    texts.push_back({{"clip", c.index}, {"samples", c.samples}, {"text", c.reference}});
  Json j = {{"ok", pass.ok}, {"clips", clips.size()}, {"empty_texts", pass.empty_texts},
            {"seconds", pass.seconds}, {"texts", texts}};
  if (!pass.ok) j["error"] = pass.error;
  return j;
}

}  // namespace serve_load
