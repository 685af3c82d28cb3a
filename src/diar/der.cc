#include "steno/diar/der.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "steno/core/error.h"

namespace steno::diar {

namespace {

constexpr size_t kMaxSpeakers = 16;

struct Side {
  std::vector<std::string> names;
  std::vector<std::vector<std::pair<double, double>>> spans;  // per speaker, as given
};

Side by_speaker(const std::vector<LabeledSegment>& segments, const char* what) {
  Side side;
  for (const LabeledSegment& s : segments) {
    STENO_CHECK(std::isfinite(s.start) && std::isfinite(s.end) && s.end >= s.start,
                "DER: {} segment of '{}' has start {} and end {}", what, s.speaker, s.start, s.end);
    auto it = std::find(side.names.begin(), side.names.end(), s.speaker);
    if (it == side.names.end()) {
      side.names.push_back(s.speaker);
      side.spans.emplace_back();
      it = side.names.end() - 1;
    }
    side.spans[it - side.names.begin()].emplace_back(s.start, s.end);
  }
  STENO_CHECK(side.names.size() <= kMaxSpeakers, "DER: {} has {} speakers, at most {} are scored", what,
              side.names.size(), kMaxSpeakers);
  return side;
}

// Sorted, merged [start, end) intervals with a logarithmic membership test.
class Intervals {
 public:
  explicit Intervals(std::vector<std::pair<double, double>> spans) {
    std::sort(spans.begin(), spans.end());
    for (const auto& s : spans)
      if (!merged_.empty() && s.first <= merged_.back().second)
        merged_.back().second = std::max(merged_.back().second, s.second);
      else
        merged_.push_back(s);
  }
  bool contains(double t) const {
    auto it = std::upper_bound(merged_.begin(), merged_.end(), t,
                               [](double v, const std::pair<double, double>& s) { return v < s.first; });
    return it != merged_.begin() && t < std::prev(it)->second;
  }

 private:
  std::vector<std::pair<double, double>> merged_;
};

// The one-to-one mapping of hypothesis to reference speakers with the largest total overlap (bitmask dynamic
// programming over the hypothesis speakers; a speaker may stay unmapped).
std::vector<int> best_mapping(const std::vector<std::vector<double>>& overlap, size_t n_ref, size_t n_hyp) {
  const size_t states = size_t{1} << n_ref;
  std::vector<std::vector<double>> best(n_hyp + 1, std::vector<double>(states, -1.0));
  std::vector<std::vector<int>> choice(n_hyp + 1, std::vector<int>(states, -1));
  best[0][0] = 0;
  for (size_t h = 0; h < n_hyp; ++h)
    for (size_t used = 0; used < states; ++used) {
      if (best[h][used] < 0) continue;
      if (best[h][used] > best[h + 1][used]) {  // h unmapped
        best[h + 1][used] = best[h][used];
        choice[h + 1][used] = -1;
      }
      for (size_t r = 0; r < n_ref; ++r) {
        if (used & (size_t{1} << r)) continue;
        const size_t next = used | (size_t{1} << r);
        const double v = best[h][used] + overlap[h][r];
        if (v > best[h + 1][next]) {
          best[h + 1][next] = v;
          choice[h + 1][next] = static_cast<int>(r);
        }
      }
    }
  size_t used = static_cast<size_t>(std::max_element(best[n_hyp].begin(), best[n_hyp].end()) - best[n_hyp].begin());
  std::vector<int> map(n_hyp, -1);
  for (size_t h = n_hyp; h > 0; --h) {
    map[h - 1] = choice[h][used];
    if (map[h - 1] >= 0) used &= ~(size_t{1} << map[h - 1]);
  }
  return map;
}

}  // namespace

DerResult& DerResult::operator+=(const DerResult& other) {
  reference_speech += other.reference_speech;
  missed += other.missed;
  false_alarm += other.false_alarm;
  confusion += other.confusion;
  return *this;
}

DerResult diarization_error(const std::vector<LabeledSegment>& reference,
                            const std::vector<LabeledSegment>& hypothesis, double collar) {
  STENO_CHECK(std::isfinite(collar) && collar >= 0, "DER: collar must be >= 0, got {}", collar);
  const Side ref = by_speaker(reference, "reference"), hyp = by_speaker(hypothesis, "hypothesis");

  // Elementary intervals between every edge and collar edge; an interval is scored unless it lies within a collar.
  std::vector<double> edges;
  std::vector<std::pair<double, double>> collars;
  for (const auto& spans : ref.spans)
    for (const auto& [s, e] : spans) {
      edges.insert(edges.end(), {s, e, s - collar, s + collar, e - collar, e + collar});
      if (collar > 0) collars.insert(collars.end(), {{s - collar, s + collar}, {e - collar, e + collar}});
    }
  const Intervals no_score(std::move(collars));
  std::vector<Intervals> ref_active, hyp_active;
  for (const auto& spans : ref.spans) ref_active.emplace_back(spans);
  for (const auto& spans : hyp.spans) hyp_active.emplace_back(spans);
  for (const auto& spans : hyp.spans)
    for (const auto& [s, e] : spans) edges.insert(edges.end(), {s, e});
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());

  struct Piece {
    double dur;
    std::vector<bool> r, h;
  };
  std::vector<Piece> pieces;
  std::vector<std::vector<double>> overlap(hyp.names.size(), std::vector<double>(ref.names.size(), 0.0));
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    const double a = edges[i], b = edges[i + 1], mid = 0.5 * (a + b);
    if (no_score.contains(mid) || b <= a) continue;
    Piece p{b - a, std::vector<bool>(ref.names.size()), std::vector<bool>(hyp.names.size())};
    for (size_t r = 0; r < ref.names.size(); ++r) p.r[r] = ref_active[r].contains(mid);
    for (size_t h = 0; h < hyp.names.size(); ++h) p.h[h] = hyp_active[h].contains(mid);
    for (size_t h = 0; h < hyp.names.size(); ++h)
      for (size_t r = 0; r < ref.names.size(); ++r)
        if (p.h[h] && p.r[r]) overlap[h][r] += p.dur;
    pieces.push_back(std::move(p));
  }

  const std::vector<int> map = best_mapping(overlap, ref.names.size(), hyp.names.size());
  DerResult out;
  for (size_t h = 0; h < map.size(); ++h)
    if (map[h] >= 0) out.mapping[hyp.names[h]] = ref.names[map[h]];
  for (const Piece& p : pieces) {
    const auto n_ref = static_cast<double>(std::count(p.r.begin(), p.r.end(), true));
    const auto n_hyp = static_cast<double>(std::count(p.h.begin(), p.h.end(), true));
    double correct = 0;
    for (size_t h = 0; h < map.size(); ++h)
      if (map[h] >= 0 && p.h[h] && p.r[map[h]]) ++correct;
    out.reference_speech += p.dur * n_ref;
    out.missed += p.dur * std::max(0.0, n_ref - n_hyp);
    out.false_alarm += p.dur * std::max(0.0, n_hyp - n_ref);
    out.confusion += p.dur * (std::min(n_ref, n_hyp) - correct);
  }
  return out;
}

std::map<std::string, std::vector<LabeledSegment>> parse_rttm(std::string_view text, const std::string& source) {
  std::map<std::string, std::vector<LabeledSegment>> out;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string w; fields >> w;) f.push_back(w);
    if (f.empty() || f[0].starts_with(";;") || f[0] != "SPEAKER") continue;
    STENO_CHECK(f.size() >= 8, "{}:{}: an RTTM SPEAKER line has at least 8 fields, this one {}", source, number,
                f.size());
    char* end = nullptr;
    const double start = std::strtod(f[3].c_str(), &end);
    const bool start_ok = end == f[3].c_str() + f[3].size();
    const double duration = std::strtod(f[4].c_str(), &end);
    const bool duration_ok = end == f[4].c_str() + f[4].size();
    STENO_CHECK(start_ok && duration_ok && std::isfinite(start) && std::isfinite(duration) && start >= 0 &&
                    duration >= 0,
                "{}:{}: bad start '{}' or duration '{}'", source, number, f[3], f[4]);
    out[f[1]].push_back(LabeledSegment{f[7], start, start + duration});
  }
  return out;
}

}  // namespace steno::diar
