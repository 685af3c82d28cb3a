// decode_audio: sniff the container, check what the header claims against the limits and the bytes present, then
// decode in chunks (mixing to mono and resampling as it goes), so memory is bounded by the 16 kHz output. An input
// that ends early is decoded as far as it goes, with a warning saying what is missing (truncation.h).
#include "steno/audio/decode.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "chunk_probe.h"
#include "decoder.h"
#include "duration_estimate.h"
#include "ogg_probe.h"
#include "sniff.h"
#include "audio/resample.h"
#include "steno/core/error.h"
#include "stream_resampler.h"
#include "truncation.h"

namespace steno::audio {
namespace {

constexpr int64_t kChunkFrames = 8192;

void check_limits(const AudioLimits& limits) {
  STENO_CHECK(std::isfinite(limits.max_duration_s) && limits.max_duration_s > 0,
              "AudioLimits.max_duration_s must be positive and finite, got {}", limits.max_duration_s);
  STENO_CHECK(limits.max_bytes > 0, "AudioLimits.max_bytes must be positive");
}

[[noreturn]] void fail_duration(double seconds, const AudioLimits& limits, bool at_least = false) {
  fail(ErrorCode::kOutOfRange, "audio is {}{:.1f} s, over the limit of {:g} s (--max-audio-seconds)",
       at_least ? "more than " : "", seconds, limits.max_duration_s);
}

void check_stream(const Decoder& decoder, Container container) {
  const int channels = decoder.channels(), rate = decoder.sample_rate();
  const char* name = container_name(container);
  if (channels <= 0) fail(ErrorCode::kDataLoss, "malformed {}: the header says {} channels", name, channels);
  if (rate <= 0) fail(ErrorCode::kDataLoss, "malformed {}: the header says a sample rate of {} Hz", name, rate);
  if (channels > kMaxChannelsIn)
    fail(ErrorCode::kOutOfRange, "audio has {} channels, over the limit of {}", channels, kMaxChannelsIn);
  if (rate < kMinSampleRateIn || rate > kMaxSampleRateIn)
    fail(ErrorCode::kOutOfRange, "sample rate {} Hz is outside the supported range {}..{} Hz", rate,
         kMinSampleRateIn, kMaxSampleRateIn);
}

void check_finite(std::span<const float> interleaved, int channels, int64_t first_frame, int rate) {
  for (size_t i = 0; i < interleaved.size(); ++i) {
    if (std::isfinite(interleaved[i])) continue;
    const int64_t frame = first_frame + static_cast<int64_t>(i / static_cast<size_t>(channels));
    fail(ErrorCode::kDataLoss, "sample {} (channel {}, at {:.3f} s) is {}; audio samples must be finite numbers",
         frame, i % static_cast<size_t>(channels), static_cast<double>(frame) / rate,
         std::isnan(interleaved[i]) ? "NaN" : "infinite");
  }
}

// Decodes everything after the header checks: returns the frames read and appends 16 kHz mono to `out`.
int64_t decode_stream(Decoder& decoder, const AudioLimits& limits, std::vector<float>& out) {
  const int channels = decoder.channels(), rate = decoder.sample_rate();
  const double max_frames = limits.max_duration_s * rate;  // enforced while decoding too: lengths may be unknown
  std::optional<StreamResampler> resampler;
  if (rate != kSampleRate) resampler.emplace(rate, kSampleRate);
  std::vector<float> buffer(static_cast<size_t>(kChunkFrames * channels));
  int64_t frames = 0;
  for (;;) {
    const int64_t n = decoder.read(buffer.data(), kChunkFrames);
    if (n == 0) break;
    if (static_cast<double>(frames + n) > max_frames) fail_duration(limits.max_duration_s, limits, true);
    const std::span<float> samples(buffer.data(), static_cast<size_t>(n * channels));
    check_finite(samples, channels, frames, rate);
    // Float input may lie far beyond full scale (up to 3.4e38): clipped here, before the channels are summed and
    // the resampler's filter runs, where such values overflow to infinities and NaNs (found by fuzzing).
    for (float& s : samples) s = std::clamp(s, -1.0f, 1.0f);
    frames += n;
    const std::vector<float> mono = to_mono(samples, channels);
    if (resampler) resampler->process(mono, out);
    else out.insert(out.end(), mono.begin(), mono.end());
  }
  if (resampler) resampler->flush(out);
  return frames;
}

// The header says how long the audio is: refuse it now if over the limit, before a decoder reads (or, for a mapped
// file, before the pages holding the audio are touched).
void check_stated_duration(std::span<const uint8_t> bytes, const Sniffed& sniffed, const AudioLimits& limits) {
  const std::optional<double> stated = stated_duration_s(bytes, sniffed, bytes.size());
  if (stated && *stated > limits.max_duration_s) fail_duration(*stated, limits);
}

// A decoder that cannot open an input the header evidence shows to be cut off fails for want of audio: say so.
std::unique_ptr<Decoder> open_decoder_or_explain(std::span<const uint8_t> bytes, const Sniffed& sniffed,
                                                 const EndEvidence& evidence) {
  try {
    return open_decoder(bytes, sniffed);
  } catch (const Error& e) {
    const auto shortfall = e.code() == ErrorCode::kDataLoss ? describe_shortfall(evidence) : std::nullopt;
    if (!shortfall) throw;
    fail(ErrorCode::kDataLoss, "truncated: {}; no audio could be decoded ({})", *shortfall, e.what());
  }
}

// Nothing decoded: an error that says why, since there is nothing to warn about.
[[noreturn]] void fail_nothing_decoded(const EndEvidence& evidence, int64_t header_frames) {
  if (const auto shortfall = describe_shortfall(evidence))
    fail(ErrorCode::kDataLoss, "truncated: {}; no audio could be decoded", *shortfall);
  if (header_frames == 0) fail(ErrorCode::kInvalidArgument, "audio contains no samples (0 frames)");
  fail(ErrorCode::kDataLoss, "truncated or corrupt {}: no audio could be decoded", evidence.container);
}

}  // namespace

DecodedAudio decode_audio(std::span<const uint8_t> bytes, const AudioLimits& limits) {
  check_limits(limits);
  if (bytes.empty()) fail(ErrorCode::kInvalidArgument, "audio input is empty (0 bytes)");
  if (bytes.size() > limits.max_bytes)
    fail(ErrorCode::kOutOfRange, "audio input is {} bytes, over the limit of {} bytes", bytes.size(),
         limits.max_bytes);

  // Header checks: nothing is decoded yet.
  const Sniffed sniffed = sniff_container(bytes);
  std::optional<DataChunk> chunk = probe_data_chunk(bytes, sniffed.container);
  check_stated_duration(bytes, sniffed, limits);
  EndEvidence evidence = header_evidence(bytes, sniffed, std::move(chunk));
  const std::unique_ptr<Decoder> decoder = open_decoder_or_explain(bytes, sniffed, evidence);
  check_stream(*decoder, sniffed.container);
  const int rate = decoder->sample_rate();
  const int64_t header_frames = decoder->frames();  // -1: unknown
  if (header_frames >= 0 && static_cast<double>(header_frames) / rate > limits.max_duration_s)
    fail_duration(static_cast<double>(header_frames) / rate, limits);

  DecodedAudio result;
  result.sample_rate = kSampleRate;
  result.channels_in = decoder->channels();
  result.sample_rate_in = rate;
  result.format = decoder->format_name();
  if (header_frames > 0) {
    // Reserve what the header promises (within the duration limit), but no more than 16M samples or one per input
    // byte: FLAC and Ogg lengths are unverified claims, and a tiny file must not reserve hundreds of MB.
    const double expected = std::ceil(static_cast<double>(header_frames) * kSampleRate / rate) + 16;
    const double cap = static_cast<double>(std::max<size_t>(size_t{1} << 24, bytes.size()));
    result.samples.reserve(static_cast<size_t>(std::min(expected, cap)));
  }
  evidence.rate = rate;
  evidence.decoded_frames = decode_stream(*decoder, limits, result.samples);
  // The decoder's own count of what the header states is the one its output length is comparable with.
  evidence.stated_frames = decoder->stated_frames();
  evidence.last_frame_cut = evidence.last_frame_cut || decoder->last_frame_cut();

  if (evidence.decoded_frames == 0) fail_nothing_decoded(evidence, header_frames);
  if (const auto shortfall = describe_shortfall(evidence))
    result.warnings.push_back(truncation_warning(*shortfall, result.duration_s()));
  // Lossy decoders and the resampler can overshoot full scale slightly.
  for (float& s : result.samples) s = std::clamp(s, -1.0f, 1.0f);
  return result;
}

}  // namespace steno::audio
