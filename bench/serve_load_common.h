// serve_load's shared ground: the flags' values (Options), the clock and JSON types, and the small helpers every mode
// uses (number formatting, durations and wall-clock time, reading a file, the descriptor limit, latency summaries, the
// test clips and WAV bytes).
#pragma once

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#ifndef STENO_SOURCE_DIR
#define STENO_SOURCE_DIR "."
#endif

namespace serve_load {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int requests = 1000;
  std::string testset = std::string(STENO_SOURCE_DIR) + "/tests/data/testset/espeak";
  double timeout_s = 300;
  int warmup = 2;
  int grace_ms = 1000;
  std::string out;
  // --accept-differing-text (every load mode): a 200 whose text is not the reference counts as ok, tallied apart as
  // `differs`. For random-weight models, whose greedy text flips with the batch's padding (reduction orders).
  bool accept_differing_text = false;
  // --route (the HTTP load modes): the OpenAI route the requests go to, "transcriptions" or "diarizations" (POST
  // /v1/audio/diarizations: a diarizer served with --diarizer; its answers compared by their segments).
  std::string route = "transcriptions";
  // --closed-loop
  bool closed_loop = false;
  std::vector<int> concurrency = {1, 4, 8, 16, 20, 24, 32, 64, 100};  // the protocol's `seed` sweep
  double duration_s = 30;
  double warmup_s = 5;
  std::string clip;
  double sla_mean_ms = 650;
  double sla_p99_ms = 1000;
  // --ports P1,P2,... (closed loop, HTTP): N servers side by side, connection i pinned to server i mod N, as behind
  // a round-robin balancer with keep-alive; port is then ports[0] (the reference answer and /metrics come from it).
  std::vector<int> ports;
  int grpc_port = 0;  // > 0: the requests go over KServe v2 gRPC to this port (serve_load_grpc.h); /metrics stays HTTP
  std::string model;  // the model name gRPC requests address (required with grpc_port)
  // --open-loop (also duration_s, warmup_s, sla_p99_ms; sla_mean_ms only when given)
  bool open_loop = false;
  std::vector<double> rates = {1, 2, 5, 10, 20, 50, 100, 200};  // requests/s
  std::string workload = "mix";
  int mix_clips = 100;  // distinct clips sent (each needs a reference request first); --offline: all 1,000
  bool mix_clips_given = false;
  // --offline: the mix's clips as one job, sorted by length, all sent at once (the default mode's machinery)
  bool offline = false;
  int max_in_flight = 2000;
  bool sla_mean_given = false;
  // --make-clip
  std::string make_clip;
  double clip_seconds = 45;
};

std::string number(double v);  // le="16" rather than le="16.000000"

double round3(double v);  // to 3 decimals (the per-request rows' times)

Clock::duration seconds(double s);
double ms_between(Clock::time_point from, Clock::time_point to);
double unix_now();  // wall-clock seconds since the Unix epoch (to line up with GPU samples)

std::string read_file(const std::string& path);

// The .flac files of `dir` in name order (the test speech that --make-clip and --open-loop cut their clips from);
// throws when there are none.
std::vector<std::filesystem::path> flac_files(const std::string& dir);

// A 16-bit PCM mono WAV file's bytes (44-byte RIFF header); samples in [-1, 1] scaled by 32768, as the decoder reads
// them (the test clips are 16-bit FLAC, so their samples round-trip exactly).
std::string wav_pcm16(const std::vector<float>& samples, int sample_rate);

// Raises RLIMIT_NOFILE's soft limit to the hard one (one descriptor per connection), says so on stderr, warns when
// even that is too low for `needed` connections; the limits before and after, as JSON.
Json raise_nofile(int needed);

// Mean, nearest-rank p50/p90/p95/p99, max and min of latencies in ms (all 0 when there are none).
Json latency_json(std::vector<double> values);

}  // namespace serve_load
