#include "steno/diar/segments.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "steno/core/error.h"

namespace steno::diar {

namespace {

using Segment = std::array<float, 2>;
using Segments = std::vector<Segment>;

constexpr double kFrameSeconds = 0.01;  // vad_utils.binarization's frame_length_in_sec default

// merge_overlap_segment: sort by start, then join each run of neighbours where one ends at or after the next
// starts. Only neighbours are compared (as NeMo does): a segment reaching past its successor's successor is not
// joined with it.
Segments merge_overlaps(Segments segs) {
  if (segs.size() <= 1) return segs;
  std::stable_sort(segs.begin(), segs.end(), [](const Segment& a, const Segment& b) { return a[0] < b[0]; });
  Segments out;
  const size_t n = segs.size();
  for (size_t k = 0; k < n; ++k) {
    const bool joins_previous = k > 0 && segs[k - 1][1] >= segs[k][0];
    const bool joins_next = k + 1 < n && segs[k][1] >= segs[k + 1][0];
    if (!joins_previous) out.push_back({segs[k][0], 0.0f});
    if (!joins_next) out.back()[1] = segs[k][1];
  }
  return out;
}

// binarization: hysteresis over 10 ms frames; times in float64 as TorchScript computes them, stored in float32.
Segments binarize(const std::vector<float>& frames, const PostProcessingParams& p) {
  const float onset = static_cast<float>(p.onset), offset = static_cast<float>(p.offset);
  Segments segs;
  bool speech = false;
  double start = 0.0;
  int64_t i = 0;
  for (i = 0; i < static_cast<int64_t>(frames.size()); ++i) {
    if (speech) {
      if (frames[i] < offset) {
        const double s = std::max(0.0, start - p.pad_onset), e = static_cast<double>(i) * kFrameSeconds + p.pad_offset;
        if (e > s) segs.push_back({static_cast<float>(s), static_cast<float>(e)});
        start = static_cast<double>(i) * kFrameSeconds;
        speech = false;
      }
    } else if (frames[i] > onset) {
      start = static_cast<double>(i) * kFrameSeconds;
      speech = true;
    }
  }
  if (speech) {  // NeMo ends the last segment at the last frame's index, not one past it
    const double last = static_cast<double>(i - 1) * kFrameSeconds;
    segs.push_back({static_cast<float>(std::max(0.0, start - p.pad_onset)), static_cast<float>(last + p.pad_offset)});
  }
  return merge_overlaps(std::move(segs));
}

Segments keep_long(const Segments& segs, float threshold) {  // filter_short_segments, float32 durations
  Segments out;
  for (const Segment& s : segs)
    if (s[1] - s[0] >= threshold) out.push_back(s);
  return out;
}

// filtering with filter_speech_first: short speech dropped, then gaps shorter than min_duration_off filled.
Segments filter(Segments segs, const PostProcessingParams& p) {
  if (segs.empty()) return segs;
  if (p.min_duration_on > 0.0) segs = keep_long(segs, static_cast<float>(p.min_duration_on));
  if (p.min_duration_off > 0.0) {
    Segments sorted = segs;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Segment& a, const Segment& b) { return a[0] < b[0]; });
    Segments gaps;
    for (size_t k = 0; k + 1 < sorted.size(); ++k) gaps.push_back({sorted[k][1], sorted[k + 1][0]});
    const Segments long_gaps = keep_long(gaps, static_cast<float>(p.min_duration_off));
    // remove_segments: a gap equal to any long gap goes, so the short ones remain and become speech.
    for (const Segment& g : gaps)
      if (std::find(long_gaps.begin(), long_gaps.end(), g) == long_gaps.end()) segs.push_back(g);
    segs = merge_overlaps(std::move(segs));
  }
  return segs;
}

// Python's round(x, 2): the decimal nearest to x's exact binary value (ties to even), read back as a double.
double py_round2(double x) { return std::strtod(fmt::format("{:.2f}", x).c_str(), nullptr); }

// speaker_utils.fl2int / int2fl with decimals 5: through float32 tensors, torch.round in float32.
int64_t fl2int(double x) { return static_cast<int64_t>(std::nearbyint(static_cast<float>(x * 100000))); }
double int2fl(int64_t x) {
  const float v = static_cast<float>(static_cast<double>(x) / 100000);
  return static_cast<double>(std::nearbyint(v * 100000.0f) / 100000.0f);
}

// merge_float_intervals (margin 2) and merge_int_intervals, which sorts starts and ends each on their own.
std::vector<std::array<double, 2>> merge_float_intervals(const std::vector<std::array<double, 2>>& ranges) {
  constexpr int64_t kMargin = 2;
  std::vector<int64_t> starts, ends;
  for (const auto& r : ranges) {
    const int64_t s = fl2int(r[0]) + kMargin, e = fl2int(r[1]);
    if (s < e) starts.push_back(s), ends.push_back(e);
  }
  std::vector<std::array<int64_t, 2>> merged;
  if (starts.size() == 1) {
    merged.push_back({starts[0], ends[0]});
  } else if (!starts.empty()) {
    std::sort(starts.begin(), starts.end());
    std::sort(ends.begin(), ends.end());
    int64_t start = starts[0], end = ends[0];
    for (size_t i = 1; i < starts.size(); ++i) {
      if (end >= starts[i]) {
        end = std::max(ends[i], end);
      } else {
        merged.push_back({start, end});
        start = starts[i];
        end = std::max(ends[i], end);
      }
    }
    merged.push_back({start, end});
  }
  std::vector<std::array<double, 2>> out;
  for (const auto& m : merged) out.push_back({int2fl(m[0] - kMargin), int2fl(m[1])});
  return out;
}

}  // namespace

std::vector<std::array<float, 2>> post_process_speaker(std::span<const float> probs, int unit_10ms_frames,
                                                       const PostProcessingParams& params) {
  STENO_CHECK(unit_10ms_frames >= 1, "post-processing: {} 10 ms frames per model frame", unit_10ms_frames);
  std::vector<float> frames;
  frames.reserve(probs.size() * static_cast<size_t>(unit_10ms_frames));
  for (const float p : probs) frames.insert(frames.end(), static_cast<size_t>(unit_10ms_frames), p);
  return filter(binarize(frames, params), params);
}

std::vector<SpeakerSegment> speaker_segments(std::span<const float> probs, int64_t frames, int speakers,
                                             int unit_10ms_frames, const PostProcessingParams& params,
                                             double offset) {
  STENO_CHECK(frames >= 0 && speakers >= 1 && static_cast<int64_t>(probs.size()) == frames * speakers,
              "post-processing: {} probabilities for {} frames x {} speakers", probs.size(), frames, speakers);
  std::vector<SpeakerSegment> out;
  std::vector<float> column(static_cast<size_t>(frames));
  for (int s = 0; s < speakers; ++s) {
    for (int64_t t = 0; t < frames; ++t) column[t] = probs[t * speakers + s];
    std::vector<std::array<double, 2>> rounded;
    for (const Segment& seg : post_process_speaker(column, unit_10ms_frames, params)) {
      // ts_mat + offset stays float32; tolist() then round(x, 2) in Python floats.
      const float start = seg[0] + static_cast<float>(offset), end = seg[1] + static_cast<float>(offset);
      rounded.push_back({py_round2(start), py_round2(end)});
    }
    for (const auto& m : merge_float_intervals(rounded)) out.push_back({m[0], m[1], s});
  }
  return out;
}

std::string nemo_line(const SpeakerSegment& segment) {
  return fmt::format("{:.3f} {:.3f} speaker_{}", segment.start, segment.end, segment.speaker);
}

std::vector<SpeakerSegment> in_time_order(std::vector<SpeakerSegment> segments) {
  std::stable_sort(segments.begin(), segments.end(), [](const SpeakerSegment& a, const SpeakerSegment& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end < b.end;
    return a.speaker < b.speaker;
  });
  return segments;
}

}  // namespace steno::diar
