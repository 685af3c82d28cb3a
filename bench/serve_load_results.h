// What both sweeps (--closed-loop, --open-loop) make of their points' requests: the phase and the outcome each
// request had, tallies by outcome, the SLA's misses, the wrong and differing examples, the per-request rows' shared
// columns, the headline, the progress and closing lines, and the result file (per-request rows one to a line).
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "serve_load_common.h"
#include "serve_load_http.h"

namespace serve_load {

// When a request ended (closed loop) or arrived (open loop), relative to the measurement window. Open-loop requests
// all arrive before the window closes: only the closed loop has drain requests.
enum class Phase { kWarmup, kWindow, kDrain };

const char* phase_name(Phase p);    // "warmup", "window", "drain"
const char* result_name(Result r);  // "ok", "wrong", "failed"

// One request of a point, as it ended: what both loops record (each derives its own columns from it).
struct Outcome {
  Phase phase = Phase::kWindow;
  double latency_ms = -1;  // to the whole answer (each loop says from when); -1 without an answer
  int status = 0;
  Result result = Result::kFailed;
  std::string reason;    // why it is not ok
  std::string got;       // a wrong or differing answer's text
  bool differs = false;  // ok only by --accept-differing-text: its text is not the reference

  // The answer's HTTP status and the verdict on it, another text accepted as ok when `accept_differing_text`.
  void take(int http_status, const Verdict& v, bool accept_differing_text);
};

// Requests of one phase, or of a run: how many, ok, wrong, failed and why; differs: the ok ones with another text
// than the reference (--accept-differing-text).
struct Tally {
  int requests = 0, ok = 0, wrong = 0, failed = 0, differs = 0;
  std::map<std::string, int> failed_by_reason;

  void count(const Outcome& o);
};

// The requests of `phase` among `outcomes` (a loop's outcomes, derived from Outcome).
template <class O>
Tally tally(const std::vector<O>& outcomes, Phase phase) {
  Tally t;
  for (const Outcome& o : outcomes)
    if (o.phase == phase) t.count(o);
  return t;
}

// Every request of `outcomes`, whatever its phase, added to `total`.
template <class O>
void count_all(Tally& total, const std::vector<O>& outcomes) {
  for (const Outcome& o : outcomes) total.count(o);
}

// The latencies of the window's ok requests.
template <class O>
std::vector<double> window_ok_latencies(const std::vector<O>& outcomes) {
  std::vector<double> latencies;
  for (const Outcome& o : outcomes)
    if (o.phase == Phase::kWindow && o.result == Result::kOk) latencies.push_back(o.latency_ms);
  return latencies;
}

Json tally_json(const Tally& t);  // requests, ok, wrong, failed, differs, failed_by_reason

// A point's JSON gets the window's tally as fields of its own.
void put_tally(Json& point, const Tally& window);

// The run's totals (no reasons) and which requests they count.
Json all_requests_json(const Tally& total, const std::string& note);

// The SLA's verdict on a point: its misses (empty when it meets it). At least one ok request and none wrong or failed
// in the window, latency p99 < --sla-p99-ms, and mean < --sla-mean-ms when `bound_mean`.
Json sla_misses(const Json& latency, const Tally& window, const Options& o, bool bound_mean);

// Answers counted by (clip, text): -1 for the clip where a point sends one clip.
using TextCounts = std::map<std::pair<int, std::string>, int>;

// The first `most` distinct answers with how often each came: {"clip" (unless -1), "got", "times"}.
Json text_examples_json(const TextCounts& counts, size_t most);

// The first `most` distinct answers among `outcomes` that `pick(o)` selects, `clip_of(o)` telling their clips apart
// (-1 for none).
template <class O, class Pick, class ClipOf>
Json text_examples(const std::vector<O>& outcomes, Pick pick, ClipOf clip_of, size_t most) {
  TextCounts counts;
  for (const O& o : outcomes)
    if (pick(o)) ++counts[{clip_of(o), o.got}];
  return text_examples_json(counts, most);
}

// The first 5 distinct wrong answers.
template <class O, class ClipOf>
Json wrong_examples(const std::vector<O>& outcomes, ClipOf clip_of) {
  return text_examples(outcomes, [](const O& o) { return o.result == Result::kWrong; }, clip_of, 5);
}

// The first 20 distinct differing answers (ok by --accept-differing-text): more of them, as they are the rule there.
template <class O, class ClipOf>
Json differs_examples(const std::vector<O>& outcomes, ClipOf clip_of) {
  return text_examples(outcomes, [](const O& o) { return o.differs; }, clip_of, 20);
}

// A per-request row: `row`, a loop's own leading columns, then latency_ms, status, result, why when not ok, and
// differs: true when it is ok with another text.
Json request_row(Json row, const Outcome& o);

// Every request's row, `columns(o)` giving a loop's own leading columns.
template <class O, class Columns>
Json per_request_rows(const std::vector<O>& outcomes, Columns columns) {
  Json rows = Json::array();
  for (const O& o : outcomes) rows.push_back(request_row(columns(o), o));
  return rows;
}

// /proc/loadavg's first three fields (the client's machine is the server's on loopback); null where unreadable.
Json load_average();

// The point with the highest `by` among those that meet the SLA, as its `fields` and its latency mean and p99; null
// when none does.
Json headline_json(const Json& points, const char* by, std::initializer_list<const char*> fields);

// How a point's progress line ends: its latency, the SLA's verdict and the server's batches ("latency mean 156 ms,
// p99 237 ms, max 237 ms: SLA met; 19 batches, mean 1", or "...; no /metrics").
std::string latency_sla_text(const Json& point);

// " (N with differing text)" after an ok count, when N > 0; else "".
std::string differs_text(int differs);

// The result on stdout, without the per-request rows.
void print_summary(Json result);

// The closing line on stderr: PASS or FAIL, the run's totals over `points` points, and the headline as `describe`
// puts it (or that no point meets the SLA).
void print_verdict(bool pass, const Tally& total, size_t points, const Json& headline,
                   const std::function<std::string(const Json&)>& describe);

// Writes the result to `path` (nothing when empty), each point's per-request rows one to a line (a sweep holds tens
// of thousands); false, said on stderr, when it cannot.
bool write_result(const std::string& path, const Json& result);

}  // namespace serve_load
