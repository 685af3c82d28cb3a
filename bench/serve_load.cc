// serve_load: load runs against a running `steno serve`, every answer checked. Four modes:
//
//   serve_load --port P [--host 127.0.0.1] [--requests 1000] [--testset DIR] [--timeout-s 300] [--warmup 2]
//              [--grace-ms 1000] [--out FILE.json]
//   serve_load --closed-loop --port P|--ports P1,P2,... --clip FILE [--concurrency "1 4 8 16 20 24 32 64 100"]
//              [--duration-s 30] [--warmup-s 5] [--sla-mean-ms 650] [--sla-p99-ms 1000] [--timeout-s 300]
//              [--out FILE.json] [--grpc-port G --model NAME]
//   serve_load --open-loop --port P [--workload mix|fixed] [--rates "1 2 5 10 20 50 100 200"] [--duration-s 30]
//              [--warmup-s 5] [--sla-p99-ms 1000] [--sla-mean-ms MS] [--mix-clips 100] [--max-in-flight 2000]
//              [--testset DIR] [--timeout-s 300] [--out FILE.json]
//   serve_load --offline --port P [--mix-clips 1000] [--warmup 2] [--testset DIR] [--timeout-s 300] [--out FILE.json]
//   serve_load --make-clip OUT.wav [--clip-seconds 45] [--testset DIR]
// Every load mode also takes --accept-differing-text, and the HTTP ones --route transcriptions|diarizations (the
// OpenAI route the requests go to; diarizations needs a server with --diarizer, and its answers are compared by their
// segments).
//
// The default mode: N concurrent OpenAI transcription requests, all in flight at once, one per connection, each
//   answer checked against --testset's reference transcripts; the server's batch sizes from /metrics.
// --closed-loop: the benchmark protocol's `seed` workload: for each c of --concurrency, c keep-alive connections
//   re-sending --clip; latency, requests/s and the SLA per point, and the headline. With --grpc-port, over KServe
//   v2 gRPC (ModelInfer of model --model) instead of the OpenAI endpoint; /metrics is still read from --port. With
//   --ports, N servers side by side: connection i goes to server i mod N and stays there (a round-robin balancer
//   with keep-alive); each point also gives every server's answers and latency (per_server).
// --open-loop: the benchmark protocol's `mix` workload: for each arrival rate of --rates, clips of the mix's lengths
//   sent at Poisson arrival times whatever the answers; latency, requests/s and the SLO per point, and the headline.
//   --workload fixed: every clip --clip-seconds long instead (bench/run_cpu_fairness.sh's steady short requests).
// --offline: the benchmark protocol's `offline` workload as served: the mix's clips (the first --mix-clips of its
//   1,000 lengths) as one job, longest first, every clip its own request and all in flight at once; each answer
//   checked against the clip's reference (sent alone first); RTFx = audio seconds / wall seconds.
// --make-clip: the seed workload's clip, a WAV of --clip-seconds made from --testset's FLAC clips.
// --accept-differing-text: an answer (200 or gRPC OK, with a text) whose text differs from the clip's reference counts
//   as ok (throughput, latency, the SLA, the exit status) and is tallied apart as `differs` (differs_examples); the
//   result records "accept_differing_text". For random-weight models (the benchmark's 0.6b in bf16): their greedy
//   text flips when the batch's padding changes reduction orders, so an exact match tells nothing there. Malformed
//   answers still fail.
// Each mode's header describes it in full: what it does, what its result holds, its exit status (0 only when every
// request was answered right, 1 otherwise, 2 for bad usage). The files:
//   serve_load.cc                  this one: the flags, the usage text, the result's opening fields
//   serve_load_all_at_once.{h,cc}  the default mode
//   serve_load_closed_loop.{h,cc}  --closed-loop
//   serve_load_grpc{.h,.cc,_stub.cc}  its gRPC client (the stub where serve_load is built without gRPC)
//   serve_load_open_loop.{h,cc}    --open-loop (its clip lengths from mix_workload.h, shared with cuda_engine_bench)
//   serve_load_make_clip.{h,cc}    --make-clip
//   serve_load_mix.{h,cc}          the mix's clips and their references (--open-loop, --offline)
//   serve_load_point.{h,cc}        a sweep point's event loop, shared by both loops: the measurement window (its
//                                  /metrics scrapes) and the keep-alive connections' request cycle
//   serve_load_results.{h,cc}      what both loops make of a point's requests: tallies, the SLA, per-request rows,
//                                  the headline, the progress and closing lines, the result file
//   serve_load_http.{h,cc}         the multipart request, judging an answer, one request on a blocking socket (a
//                                  clip's reference among them)
//   serve_load_metrics.{h,cc}      /metrics scraped, the increase of its counters over a run
//   serve_load_common.{h,cc}       the options, number formatting, durations and wall-clock time, the descriptor
//                                  limit, latency summaries, the test clips' file list and WAV bytes
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "serve_load_all_at_once.h"
#include "serve_load_closed_loop.h"
#include "serve_load_grpc.h"
#include "serve_load_common.h"
#include "serve_load_make_clip.h"
#include "serve_load_open_loop.h"

namespace serve_load {

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "serve_load: %s\n"
               "usage: serve_load --port P [--host H] [--requests N] [--testset DIR] [--timeout-s S] [--warmup K]\n"
               "                  [--grace-ms MS] [--out FILE.json]\n"
               "       serve_load --closed-loop --port P|--ports P1,P2 --clip FILE [--host H]\n"
               "                  [--concurrency \"1 4 8 ...\"] [--duration-s 30] [--warmup-s 5] [--sla-mean-ms 650]\n"
               "                  [--sla-p99-ms 1000] [--timeout-s S] [--out FILE.json] [--grpc-port G --model NAME]\n"
               "       serve_load --open-loop --port P [--host H] [--workload mix|fixed] [--rates \"1 2 5 ...\"]\n"
               "                  [--duration-s 30] [--warmup-s 5] [--sla-p99-ms 1000] [--sla-mean-ms MS]\n"
               "                  [--mix-clips 100] [--max-in-flight 2000] [--testset DIR] [--timeout-s S]\n"
               "                  [--out FILE.json]\n"
               "       serve_load --offline --port P [--mix-clips 1000] [--warmup K] [--testset DIR] [--timeout-s S]\n"
               "                  [--grace-ms MS] [--out FILE.json]\n"
               "       serve_load --make-clip OUT.wav [--clip-seconds 45] [--testset DIR]\n"
               "every load mode also takes --accept-differing-text: an answer whose text differs from the clip's\n"
               "  reference counts as ok, tallied apart as `differs` (for random-weight models, whose greedy text\n"
               "  flips with the batch's padding); malformed answers still fail\n"
               "and the HTTP ones --route transcriptions|diarizations (default transcriptions; diarizations needs\n"
               "  steno serve --diarizer DIR, its answers compared by their segments)\n"
               "(the header of bench/serve_load.cc describes each mode)\n",
               why.c_str());
  std::exit(2);
}

// The items of a list flag, split at spaces and commas, each read whole by `read` (std::stoi, std::stod) and kept
// when `valid`; throws std::invalid_argument at a bad item, or when there is none.
template <class Read, class Valid>
auto parse_list(const std::string& text, Read read, Valid valid) {
  std::vector<decltype(read(text, nullptr))> out;
  std::string item;
  std::istringstream in(text);
  while (in >> item) {
    std::istringstream parts(item);
    std::string part;
    while (std::getline(parts, part, ',')) {
      if (part.empty()) continue;
      size_t used = 0;
      const auto v = read(part, &used);
      if (used != part.size() || !valid(v)) throw std::invalid_argument(part);
      out.push_back(v);
    }
  }
  if (out.empty()) throw std::invalid_argument(text);
  return out;
}

// "1 4 8", "1,4,8" -> {1, 4, 8}; each >= 1.
std::vector<int> parse_int_list(const std::string& text) {
  return parse_list(
      text, [](const std::string& s, size_t* used) { return std::stoi(s, used); }, [](int v) { return v >= 1; });
}

// "1 2.5 10", "1,2.5,10" -> {1, 2.5, 10}; each > 0 and finite.
std::vector<double> parse_rate_list(const std::string& text) {
  return parse_list(
      text, [](const std::string& s, size_t* used) { return std::stod(s, used); },
      [](double v) { return v > 0 && std::isfinite(v); });
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--host") o.host = value();
      else if (a == "--port") o.port = std::stoi(value());
      else if (a == "--requests") o.requests = std::stoi(value());
      else if (a == "--testset") o.testset = value();
      else if (a == "--timeout-s") o.timeout_s = std::stod(value());
      else if (a == "--warmup") o.warmup = std::stoi(value());
      else if (a == "--grace-ms") o.grace_ms = std::stoi(value());
      else if (a == "--out") o.out = value();
      else if (a == "--accept-differing-text") o.accept_differing_text = true;
      else if (a == "--closed-loop") o.closed_loop = true;
      else if (a == "--concurrency") o.concurrency = parse_int_list(value());
      else if (a == "--duration-s") o.duration_s = std::stod(value());
      else if (a == "--warmup-s") o.warmup_s = std::stod(value());
      else if (a == "--clip") o.clip = value();
      else if (a == "--ports") o.ports = parse_int_list(value());
      else if (a == "--grpc-port") o.grpc_port = std::stoi(value());
      else if (a == "--model") o.model = value();
      else if (a == "--route") o.route = value();
      else if (a == "--sla-mean-ms") {
        o.sla_mean_ms = std::stod(value());
        o.sla_mean_given = true;  // the open loop bounds the mean only when asked to
      }
      else if (a == "--sla-p99-ms") o.sla_p99_ms = std::stod(value());
      else if (a == "--open-loop") o.open_loop = true;
      else if (a == "--rates") o.rates = parse_rate_list(value());
      else if (a == "--workload") o.workload = value();
      else if (a == "--mix-clips") {
        o.mix_clips = std::stoi(value());
        o.mix_clips_given = true;
      }
      else if (a == "--offline") o.offline = true;
      else if (a == "--max-in-flight") o.max_in_flight = std::stoi(value());
      else if (a == "--make-clip") o.make_clip = value();
      else if (a == "--clip-seconds") o.clip_seconds = std::stod(value());
      else if (a == "-h" || a == "--help") usage("transcription requests against steno serve, each checked");
      else usage("unknown argument " + a);
    } catch (const std::logic_error&) {
      usage("bad value for " + a);
    }
  }
  if (!o.make_clip.empty()) {
    if (!(o.clip_seconds > 0 && o.clip_seconds <= 3600)) usage("--clip-seconds must be in (0, 3600]");
    return o;
  }
  if (!o.ports.empty()) {
    if (o.port != 0) usage("--port and --ports exclude each other");
    if (!o.closed_loop || o.grpc_port != 0) usage("--ports applies to --closed-loop over HTTP only");
    for (int p : o.ports)
      if (p > 65535) usage("--ports: each port must be in 1..65535");
    o.port = o.ports.front();
  }
  if (o.port <= 0 || o.port > 65535) usage("--port is required (1..65535)");
  if (o.requests < 1) usage("--requests must be >= 1");
  if (o.timeout_s <= 0) usage("--timeout-s must be > 0");
  if (o.closed_loop + o.open_loop + o.offline > 1) usage("--closed-loop, --open-loop and --offline exclude each other");
  if (o.offline) {
    if (!o.mix_clips_given) o.mix_clips = 1000;  // the protocol's offline job: the whole mix
    if (o.mix_clips < 1 || o.mix_clips > 1000) usage("--mix-clips must be in 1..1000 (the mix has 1,000 lengths)");
  }
  if (o.closed_loop && o.clip.empty()) usage("--closed-loop needs --clip FILE");
  if (o.route != "transcriptions" && o.route != "diarizations")
    usage("--route must be transcriptions or diarizations");
  if (o.route != "transcriptions" && o.grpc_port != 0) usage("--route applies to the HTTP requests, not --grpc-port");
  if (o.route == "diarizations" && !o.closed_loop && !o.open_loop && !o.offline)
    usage("--route diarizations needs --closed-loop, --open-loop or --offline (the default mode checks transcripts)");
  if (o.grpc_port != 0) {
    if (!o.closed_loop) usage("--grpc-port applies to --closed-loop only");
    if (!grpc_available()) usage("--grpc-port: this serve_load was built without gRPC");
    if (o.grpc_port < 1 || o.grpc_port > 65535) usage("--grpc-port must be in 1..65535");
    if (o.model.empty()) usage("--grpc-port needs --model NAME (the served model's name, as /v1/models lists it)");
  }
  if (o.closed_loop || o.open_loop) {
    if (!(o.duration_s > 0)) usage("--duration-s must be > 0");
    if (!(o.warmup_s >= 0)) usage("--warmup-s must be >= 0");
    if (!(o.sla_mean_ms > 0) || !(o.sla_p99_ms > 0)) usage("--sla-mean-ms and --sla-p99-ms must be > 0");
  }
  if (o.open_loop) {
    if (o.workload != "mix" && o.workload != "fixed")
      usage("--workload: \"mix\" or \"fixed\" (every clip --clip-seconds long)");
    if (o.mix_clips < 1 || o.mix_clips > 1000) usage("--mix-clips must be in 1..1000 (the mix has 1,000 lengths)");
    if (o.max_in_flight < 1) usage("--max-in-flight must be >= 1");
  }
  return o;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  if (!o.make_clip.empty()) return run_make_clip(o);
  Json out;
  out["tool"] = "serve_load";
  std::string command;
  for (int i = 0; i < argc; ++i) {  // piece by piece: `const char* + std::string` here trips GCC 12's -Wrestrict
    if (i) command += ' ';
    command += argv[i];
  }
  out["command"] = command;
  out["date_utc"] = utc_now();
  out["server"] = "http://" + o.host + ":" + std::to_string(o.port);
  out["endpoint"] = o.grpc_port != 0
                        ? "grpc://" + o.host + ":" + std::to_string(o.grpc_port) +
                              " inference.GRPCInferenceService/ModelInfer (BYTES input audio, binary form; model " +
                              o.model + ")"
                        : "POST /v1/audio/" + o.route + " (multipart, response_format=json)";
  if (o.closed_loop) return run_closed_loop(o, std::move(out));
  if (o.open_loop) return run_open_loop(o, std::move(out));
  return run_all_at_once(o, std::move(out));
}

}  // namespace

}  // namespace serve_load

int main(int argc, char** argv) {
  try {
    return serve_load::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_load: %s\n", e.what());
    return 1;
  }
}
