#include "serve_load_all_at_once.h"

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "serve_load_http.h"
#include "serve_load_metrics.h"
#include "serve_load_mix.h"
#include "serve_load_results.h"
#include "steno/audio/decode.h"

namespace serve_load {

namespace {

// ---- the clips ------------------------------------------------------------------------------------------------

struct Clip {
  std::string name;      // "test-0000001.flac"
  std::string expected;  // its line in reference_transcripts.tsv
  double duration_s = 0;
  std::string body;     // the multipart body
  std::string head;     // the request line and headers, Content-Length included
};

std::vector<Clip> load_clips(const Options& o) {
  std::vector<Clip> clips;
  std::ifstream tsv(o.testset + "/reference_transcripts.tsv");
  if (!tsv) throw std::runtime_error("cannot read " + o.testset + "/reference_transcripts.tsv");
  std::string line;
  while (std::getline(tsv, line)) {
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) throw std::runtime_error("reference_transcripts.tsv: no tab in: " + line);
    Clip c;
    const std::string rel = line.substr(0, tab);
    c.name = rel.substr(rel.rfind('/') + 1);
    c.expected = line.substr(tab + 1);
    Request r = transcription_request(o, c.name, "audio/flac", read_file(o.testset + "/" + rel));
    c.body = std::move(r.body);
    c.head = std::move(r.head);
    clips.push_back(std::move(c));
  }
  if (clips.empty()) throw std::runtime_error("no clips in " + o.testset + "/reference_transcripts.tsv");
  // Durations from manifest.jsonl, when present (for audio seconds per second).
  std::ifstream manifest(o.testset + "/manifest.jsonl");
  std::map<std::string, double> durations;
  while (manifest && std::getline(manifest, line)) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("audio_filepath") || !j.contains("duration")) continue;
    const std::string p = j["audio_filepath"].get<std::string>();
    durations[p.substr(p.rfind('/') + 1)] = j["duration"].get<double>();
  }
  for (auto& c : clips)
    if (auto it = durations.find(c.name); it != durations.end()) c.duration_s = it->second;
  return clips;
}

// The mix's first --mix-clips clips (--offline), each with its reference from the server, longest first. Empty
// when a reference could not be had (`refs` says why).
std::vector<Clip> load_mix_clips(const Options& o, const tcp::endpoint& ep, Json& refs) {
  std::vector<MixClip> mix = make_mix_clips(o, speech_stream(o.testset), o.mix_clips);
  std::fprintf(stderr, "serve_load: references: %zu mix clips, each sent alone\n", mix.size());
  const ReferencePass pass = fetch_references(ep, mix);
  refs = references_json(pass, mix);
  if (!pass.ok) return {};
  std::vector<Clip> clips;
  for (MixClip& m : mix) {
    Clip c;
    char name[32];
    std::snprintf(name, sizeof name, "mix-%04d.wav", m.index);
    c.name = name;
    c.expected = std::move(m.reference);
    c.duration_s = m.seconds;
    c.body = std::move(m.request.body);
    c.head = std::move(m.request.head);
    clips.push_back(std::move(c));
  }
  std::stable_sort(clips.begin(), clips.end(), [](const Clip& a, const Clip& b) { return a.duration_s > b.duration_s; });
  return clips;
}

// ---- the concurrent run ---------------------------------------------------------------------------------------

struct Slot {
  explicit Slot(net::io_context& ioc) : socket(ioc) {}
  int index = 0;
  int clip = 0;
  tcp::socket socket;
  bool connected = false;
  beast::flat_buffer buffer;
  std::optional<bhttp::response_parser<bhttp::string_body>> parser;
  Clock::time_point sent, answered;
  Result result = Result::kPending;
  int status = 0;
  std::string reason, got, request_id;
  bool differs = false;    // ok only by --accept-differing-text: the text is not the clip's reference
  int responses = 0;       // complete responses read on this connection
  size_t extra_bytes = 0;  // > 0: bytes after the first response that did not make a whole response
  bool closed = false;
};

class Run {
 public:
  Run(const Options& o, const std::vector<Clip>& clips, const tcp::endpoint& ep)
      : o_(o), clips_(clips), ep_(ep), deadline_(ioc_), grace_(ioc_) {
    for (int i = 0; i < o.requests; ++i) {
      slots_.push_back(std::make_unique<Slot>(ioc_));
      slots_.back()->index = i;
      slots_.back()->clip = i % static_cast<int>(clips.size());
    }
  }

  // Opens every connection; returns how many failed.
  int connect_all() {
    const auto start = Clock::now();
    for (auto& s : slots_) {
      Slot* slot = s.get();
      slot->socket.async_connect(ep_, [slot](error_code ec) {
        if (ec) {
          slot->result = Result::kFailed;
          slot->reason = "connect: " + ec.message();
          return;
        }
        slot->connected = true;
        error_code ignored;
        slot->socket.set_option(tcp::no_delay(true), ignored);
      });
    }
    ioc_.run();
    ioc_.restart();
    connect_s_ = std::chrono::duration<double>(Clock::now() - start).count();
    int failed = 0;
    for (auto& s : slots_) failed += !s->connected;
    return failed;
  }

  void send_all() {
    start_ = Clock::now();
    for (auto& s : slots_) {
      if (s->connected) {
        ++outstanding_;
        send(*s);
      }
    }
    deadline_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.timeout_s)));
    deadline_.async_wait([this](error_code ec) {
      if (ec) return;
      timed_out_ = true;
      for (auto& s : slots_) {
        if (s->result == Result::kPending) {
          s->result = Result::kFailed;
          s->reason = "no answer within " + number(o_.timeout_s) + " s";
        }
      }
      close_all();
    });
    if (outstanding_ == 0) finish();
    ioc_.run();
    end_ = last_answer_ == Clock::time_point{} ? Clock::now() : last_answer_;
  }

  Json result_json() const;
  bool clean() const;

 private:
  void send(Slot& s) {
    const Clip& clip = clips_[s.clip];
    s.parser.emplace();
    s.parser->body_limit(kBodyLimit);
    s.sent = Clock::now();
    const std::array<net::const_buffer, 2> bufs = {net::buffer(clip.head), net::buffer(clip.body)};
    net::async_write(s.socket, bufs, [this, &s](error_code ec, size_t) {
      if (ec) return fail(s, "write: " + ec.message());
      bhttp::async_read(s.socket, s.buffer, *s.parser, [this, &s](error_code ec, size_t) { on_response(s, ec); });
    });
  }

  void fail(Slot& s, const std::string& reason) {
    if (s.result != Result::kPending) return;
    s.result = Result::kFailed;
    s.reason = reason;
    s.answered = last_answer_ = Clock::now();
    done_one();
  }

  void on_response(Slot& s, error_code ec) {
    if (s.result != Result::kPending) return;  // timed out meanwhile
    if (ec) return fail(s, "read: " + ec.message());
    s.answered = last_answer_ = Clock::now();
    ++s.responses;
    const auto& r = s.parser->get();
    s.status = r.result_int();
    const auto id = r["X-Request-Id"];
    s.request_id.assign(id.data(), id.size());
    const Verdict v = judge(r, clips_[s.clip].expected);
    s.got = v.got;
    s.reason = v.reason;
    s.result = result_of(v, o_.accept_differing_text);
    s.differs = v.wrong_text && s.result == Result::kOk;
    done_one();
    watch(s);
  }

  // After the answer: anything more the server sends on this connection is a second answer (or junk).
  void watch(Slot& s) {
    if (s.closed) return;
    s.parser.emplace();
    s.parser->body_limit(kBodyLimit);
    bhttp::async_read(s.socket, s.buffer, *s.parser, [this, &s](error_code ec, size_t) {
      if (s.closed) return;
      if (!ec) {
        ++s.responses;
        return watch(s);
      }
      if (s.parser->got_some()) s.extra_bytes += 1;  // a partial response: more than one answer began
      // end_of_stream: the server closed the connection, nothing more can arrive.
    });
  }

  void done_one() {
    if (--outstanding_ == 0) finish();
  }

  void finish() {
    deadline_.cancel();
    grace_.expires_after(std::chrono::milliseconds(o_.grace_ms));
    grace_.async_wait([this](error_code) { close_all(); });
  }

  void close_all() {
    for (auto& s : slots_) {
      if (s->closed) continue;
      s->closed = true;
      error_code ignored;
      s->socket.shutdown(tcp::socket::shutdown_both, ignored);
      s->socket.close(ignored);
    }
    grace_.cancel();
  }

  const Options& o_;
  const std::vector<Clip>& clips_;
  tcp::endpoint ep_;
  net::io_context ioc_{1};
  std::vector<std::unique_ptr<Slot>> slots_;
  net::steady_timer deadline_, grace_;
  int outstanding_ = 0;
  bool timed_out_ = false;
  double connect_s_ = 0;
  Clock::time_point start_, end_, last_answer_;
};

Json Run::result_json() const {
  Json j;
  int ok = 0, wrong = 0, failed = 0, differs = 0, duplicates = 0, extra = 0;
  std::map<std::string, int> reasons;
  std::set<std::string> ids;
  int with_id = 0;
  std::vector<double> latencies;
  double audio_s = 0;
  Json wrong_examples = Json::array(), differs_examples = Json::array(), per_request = Json::array();
  for (const auto& s : slots_) {
    // ok: answered exactly once, 200, the right text (or, with --accept-differing-text, any text: then also counted
    // as differs). A right first answer followed by another is a failure.
    Result result = s->result;
    std::string reason = s->reason;
    if (result == Result::kOk && (s->responses > 1 || s->extra_bytes > 0)) {
      result = Result::kFailed;
      reason = s->responses > 1 ? "answered " + std::to_string(s->responses) + " times" : "bytes after the answer";
    }
    ok += result == Result::kOk;
    wrong += result == Result::kWrong;
    const bool ok_differing = result == Result::kOk && s->differs;
    differs += ok_differing;
    if (result == Result::kFailed || result == Result::kPending) {
      ++failed;
      ++reasons[reason.empty() ? "unknown" : reason];
    }
    duplicates += std::max(0, s->responses - 1);
    extra += s->extra_bytes > 0;
    if (!s->request_id.empty()) {
      ++with_id;
      ids.insert(s->request_id);
    }
    const double latency_ms =
        s->responses > 0 ? std::chrono::duration<double, std::milli>(s->answered - s->sent).count() : -1;
    if (result == Result::kOk) {
      latencies.push_back(latency_ms);
      audio_s += clips_[s->clip].duration_s;
    }
    if (s->result == Result::kWrong && wrong_examples.size() < 20)
      wrong_examples.push_back(
          {{"request", s->index}, {"clip", clips_[s->clip].name}, {"expected", clips_[s->clip].expected},
           {"got", s->got}});
    if (ok_differing && differs_examples.size() < 20)
      differs_examples.push_back(
          {{"request", s->index}, {"clip", clips_[s->clip].name}, {"expected", clips_[s->clip].expected},
           {"got", s->got}});
    Json r = {{"i", s->index}, {"clip", clips_[s->clip].name}, {"status", s->status},
              {"latency_ms", std::round(latency_ms * 1000) / 1000},
              {"result", result == Result::kOk      ? "ok"
                         : result == Result::kWrong ? "wrong"
                                                    : "failed"}};
    if (!reason.empty() && result != Result::kOk) r["reason"] = reason;
    if (ok_differing) r["differs"] = true;
    if (s->responses > 1) r["responses"] = s->responses;
    if (!s->request_id.empty()) r["request_id"] = s->request_id;
    per_request.push_back(std::move(r));
  }
  const double wall_s = std::chrono::duration<double>(end_ - start_).count();
  j["requests"] = slots_.size();
  j["connections"] = slots_.size();
  j["ok"] = ok;
  j["wrong"] = wrong;
  j["failed"] = failed;
  j["differs"] = differs;
  j["failed_by_reason"] = reasons;
  j["duplicate_answers"] = duplicates;
  j["connections_with_extra_bytes"] = extra;
  j["answers_with_request_id"] = with_id;
  j["distinct_request_ids"] = ids.size();
  j["timed_out"] = timed_out_;
  j["connect_s"] = connect_s_;
  j["wall_s"] = wall_s;
  j["requests_per_s"] = wall_s > 0 ? ok / wall_s : 0.0;
  j["audio_seconds"] = audio_s;
  j["audio_seconds_per_s"] = wall_s > 0 ? audio_s / wall_s : 0.0;
  j["latency_ms"] = latency_json(latencies);
  j["wrong_examples"] = wrong_examples;
  j["differs_examples"] = differs_examples;
  j["per_request"] = per_request;
  return j;
}

bool Run::clean() const {
  std::set<std::string> ids;
  for (const auto& s : slots_) {
    if (s->result != Result::kOk || s->responses != 1 || s->extra_bytes > 0) return false;
    if (!s->request_id.empty() && !ids.insert(s->request_id).second) return false;  // two answers, one id
  }
  return true;
}

}  // namespace

int run_all_at_once(const Options& given, Json out) {
  Options o = given;
  tcp::endpoint ep(net::ip::make_address(o.host), static_cast<unsigned short>(o.port));
  std::vector<Clip> clips;
  if (o.offline) {  // the mix as one job: one request per clip
    out["mode"] = "offline";
    Json refs;
    clips = load_mix_clips(o, ep, refs);
    out["references"] = std::move(refs);
    if (clips.empty()) {
      out["pass"] = false;
      std::fprintf(stderr, "serve_load: FAIL: references: %s\n", out["references"].value("error", "?").c_str());
      if (!o.out.empty()) std::ofstream(o.out) << out.dump(2) << "\n";
      return 1;
    }
    o.requests = static_cast<int>(clips.size());
    std::vector<int64_t> samples;
    for (const Clip& c : clips) samples.push_back(std::llround(c.duration_s * steno::audio::kSampleRate));
    out["clip_lengths"] = lengths_summary(samples);
  } else {
    clips = load_clips(o);
  }
  out["rlimit_nofile"] = raise_nofile(o.requests);
  out["testset"] = o.testset;
  out["clips"] = clips.size();
  out["accept_differing_text"] = o.accept_differing_text;
  bool good = true;

  // Warm-up, one at a time on one connection.
  {
    Json w;
    int ok = 0;
    std::string error;
    net::io_context ioc;
    tcp::socket socket(ioc);
    if (o.warmup > 0 && !connect_to(socket, ep, error)) {
      std::fprintf(stderr, "serve_load: warm-up: %s\n", error.c_str());
      return 1;
    }
    for (int i = 0; i < o.warmup; ++i) {
      const Clip& clip = clips[i % clips.size()];
      SyncResult r = sync_request(socket, clip.head, clip.body);
      const Verdict v = r.ok ? judge(r.response, clip.expected) : Verdict{false, false, r.error, ""};
      if (result_of(v, o.accept_differing_text) == Result::kOk) ++ok;
      else std::fprintf(stderr, "serve_load: warm-up request %d (%s): %s\n", i, clip.name.c_str(), v.reason.c_str());
      if (!r.ok) break;
    }
    w["requests"] = o.warmup;
    w["ok"] = ok;
    out["warmup"] = w;
    good = good && ok == o.warmup;
  }

  std::string error;
  const std::optional<Scrape> before = scrape_metrics(ep, o, error);
  if (!before) std::fprintf(stderr, "serve_load: /metrics before the run: %s\n", error.c_str());

  Run load(o, clips, ep);
  const int connect_failures = load.connect_all();
  std::fprintf(stderr, "serve_load: %d connections open (%d failed); sending %d requests at once\n",
               o.requests - connect_failures, connect_failures, o.requests);
  load.send_all();
  Json client = load.result_json();
  good = good && load.clean();

  const std::optional<Scrape> after = scrape_metrics(ep, o, error);
  if (!after) std::fprintf(stderr, "serve_load: /metrics after the run: %s\n", error.c_str());

  Json per_request = std::move(client["per_request"]);
  client.erase("per_request");
  for (auto& [k, v] : client.items()) out[k] = v;
  out["server_metrics"] = before && after ? server_side(*before, *after) : Json(nullptr);
  if (o.offline) out["rtfx"] = out["audio_seconds_per_s"];  // audio seconds per wall second, as the protocol says
  out["pass"] = good;
  out["per_request"] = std::move(per_request);

  // The summary on stdout (without the per-request rows), the whole result in --out.
  Json summary = out;
  summary.erase("per_request");
  if (summary.contains("references")) summary["references"].erase("texts");
  std::cout << summary.dump(2) << std::endl;
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    f << out.dump(2) << "\n";
    if (!f) {
      std::fprintf(stderr, "serve_load: cannot write %s\n", o.out.c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "serve_load: %s: %d requests, %d ok%s, %d wrong, %d failed, %d duplicate answers, %.2f s\n",
               good ? "PASS" : "FAIL", o.requests, out["ok"].get<int>(),
               differs_text(out["differs"].get<int>()).c_str(), out["wrong"].get<int>(), out["failed"].get<int>(),
               out["duplicate_answers"].get<int>(), out["wall_s"].get<double>());
  return good ? 0 : 1;
}

}  // namespace serve_load
