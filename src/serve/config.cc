#include "steno/serve/config.h"

#include <arpa/inet.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "steno/core/device.h"
#include "steno/core/error.h"
#include "steno/vad/vad.h"

namespace steno::serve {

const char* share_mode_name(ShareMode mode) {
  switch (mode) {
    case ShareMode::kLanes: return "lanes";
    case ShareMode::kProcesses: return "processes";
    case ShareMode::kMps: return "mps";
    case ShareMode::kGreen: return "green";
  }
  return "unknown";
}

std::optional<ShareMode> parse_share_mode(std::string_view name) {
  for (ShareMode m : {ShareMode::kLanes, ShareMode::kProcesses, ShareMode::kMps, ShareMode::kGreen})
    if (name == share_mode_name(m)) return m;
  return std::nullopt;
}

std::vector<std::string> default_asr_aliases() {
  // OpenAI's names for its transcription models, so that apps written for OpenAI work unchanged; with a diarizer
  // served, gpt-4o-transcribe-diarize's diarized_json answers who said what.
  return {"whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-transcribe-diarize", "default"};
}

asr::DecodingRequest ModelConfig::decoding_request() const {
  asr::DecodingRequest r;
  r.decoding = decoding;
  r.beam_size = beam_size;
  r.lm = lm;
  if (!lm.empty()) {
    r.lm_alpha = lm_alpha;
    r.lm_beta = lm_beta;
  }
  r.lexicon = lexicon;
  if (!lexicon.empty()) r.unknown_word_penalty = unknown_word_penalty;
  return r;
}

DType ModelConfig::compute_dtype() const {
  if (fp8_linears()) return DType::kBF16;
  if (!dtype.empty()) return parse_dtype(dtype);
  return parsed_device().is_cpu() ? DType::kF32 : DType::kBF16;
}

bool ModelConfig::fp8_linears() const { return dtype == "fp8"; }

void apply_config_file(ServeConfig& config, const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorCode::kNotFound, "config file '{}' cannot be read", path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    apply_config_json(config, text.str());
  } catch (const Error& e) {
    fail(e.code(), "{}: {}", path, e.what());
  }
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost") return true;
  std::string h(host);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;  // a host name other than localhost: it may resolve to anything
}

namespace {

void validate_model(const ModelConfig& m) {
  const bool workers = uses_worker_processes(m.share);
  STENO_CHECK(m.max_audio_seconds > 0, "max_audio_seconds must be > 0, got {}", m.max_audio_seconds);
  vad::parse_vad_mode(m.vad);
  STENO_CHECK(m.long_audio_seconds > 0, "long_audio_seconds must be > 0, got {}", m.long_audio_seconds);
  STENO_CHECK(m.long_attention >= 1, "long_attention must be >= 1, got {}", m.long_attention);
  STENO_CHECK(m.piece_seconds == 0 || m.piece_seconds >= 5, "piece_seconds must be 0 (off) or >= 5, got {}",
              m.piece_seconds);
  STENO_CHECK(m.pieces_in_flight >= 0, "pieces_in_flight must be >= 0, got {}", m.pieces_in_flight);
  STENO_CHECK(m.executors >= 1, "executors (lanes) must be >= 1, got {}", m.executors);
  STENO_CHECK(m.mps_thread_percentage >= 0 && m.mps_thread_percentage <= 100,
              "mps_thread_percentage must be in 0..100 (0: 100 / executors), got {}", m.mps_thread_percentage);
  STENO_CHECK(m.share == ShareMode::kMps ||
                  (m.mps_pipe_dir.empty() && m.mps_thread_percentage == 0 && m.mps_pinned_mem_limit.empty()),
              "mps_pipe_dir, mps_thread_percentage and mps_pinned_mem_limit apply to share mps only (share is '{}')",
              share_mode_name(m.share));
  STENO_CHECK(m.share != ShareMode::kGreen || m.green_sms > 0,
              "share green needs green_sms, the SMs of each lane (e.g. 32)");
  STENO_CHECK(m.green_sms >= 0 && (m.green_sms == 0 || m.share == ShareMode::kGreen),
              "green_sms applies to share green only (share is '{}'), got {}", share_mode_name(m.share), m.green_sms);
  STENO_CHECK(m.heartbeat_ms >= 10, "heartbeat_ms must be >= 10, got {}", m.heartbeat_ms);
  STENO_CHECK(m.batch_timeout_s > 0, "batch_timeout_s must be > 0, got {}", m.batch_timeout_s);
  STENO_CHECK(m.threads_per_executor >= 0, "threads_per_lane must be >= 0, got {}", m.threads_per_executor);
  STENO_CHECK(m.max_batch >= 1, "max_batch must be >= 1, got {}", m.max_batch);
  STENO_CHECK(m.max_queue_delay_ms >= 0, "max_queue_delay_ms must be >= 0, got {}", m.max_queue_delay_ms);
  STENO_CHECK(m.max_queue_size >= 0, "max_queue_size must be >= 0, got {}", m.max_queue_size);
  STENO_CHECK(m.gemm == "onednn" || m.gemm == "openblas", "gemm must be onednn or openblas, got '{}'", m.gemm);
  STENO_CHECK(m.decoding.empty() || m.decoding == "greedy" || m.decoding == "beam",
              "decoding must be greedy or beam, got '{}'", m.decoding);
  STENO_CHECK(m.beam_size >= 0 && m.beam_size <= 256, "beam_size must be in 1..256 (0: the model's), got {}",
              m.beam_size);
  STENO_CHECK(m.decoding != "greedy" || m.lm.empty(), "lm needs decoding beam (decoding is greedy)");
  STENO_CHECK(m.decoding != "greedy" || m.lexicon.empty(), "lexicon needs decoding beam (decoding is greedy)");
  STENO_CHECK(std::isfinite(m.unknown_word_penalty) && m.unknown_word_penalty >= 0,
              "unknown_word_penalty must be finite and >= 0, got {}", m.unknown_word_penalty);
  const Device device = m.parsed_device();  // throws naming the text (the whole list is parsed)
  const DType dtype = m.compute_dtype();
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "dtype must be f32, f16, bf16 or fp8, got {}", m.dtype);
  STENO_CHECK(!device.is_cpu() || dtype == DType::kF32, "dtype {}: the CPU engine computes in f32", m.dtype);
  STENO_CHECK(!m.share_weights || (workers && !device.is_cpu()),
              "share_weights shares one device copy of the weights among worker processes: it needs share processes "
              "or mps on a CUDA device (share is '{}', device {}); lanes and green share one copy already",
              share_mode_name(m.share), device.str());
  for (const std::string& alias : m.aliases) {
    STENO_CHECK(!alias.empty(), "aliases: an alias is empty");
    STENO_CHECK(alias != m.name, "aliases: '{}' is the model's own name", alias);
  }
}

}  // namespace

void validate(const ServeConfig& c) {
  STENO_CHECK(!c.host.empty(), "host is empty");
  STENO_CHECK(c.port >= 0 && c.port <= 65535, "port must be in 0..65535, got {}", c.port);
  STENO_CHECK(c.grpc_port >= 0 && c.grpc_port <= 65535, "grpc_port must be in 0..65535 (0 = no gRPC), got {}",
              c.grpc_port);
  STENO_CHECK(c.grpc_port == 0 || c.grpc_port != c.port, "grpc_port and port are both {}: give gRPC its own port",
              c.port);
  STENO_CHECK(c.max_body_mb > 0 && c.max_body_mb <= 2047, "max_body_mb must be in (0, 2047] (gRPC's message "
              "limit is an int), got {}", c.max_body_mb);
  STENO_CHECK(c.max_upload_mb > 0 && c.max_upload_mb <= 1024 * 1024, "max_upload_mb must be in (0, 1048576], got {}",
              c.max_upload_mb);
  STENO_CHECK(c.upload_buffer_mb >= 1, "upload_buffer_mb must be >= 1 (an upload's start is judged from memory), "
              "got {}", c.upload_buffer_mb);
  STENO_CHECK(c.io_threads >= 1 && c.worker_threads >= 0, "io_threads must be >= 1 and worker_threads >= 0 (0: "
              "half the machine's threads)");
  STENO_CHECK(c.read_timeout_s > 0 && c.idle_timeout_s > 0 && c.drain_timeout_s >= 0,
              "read_timeout_s and idle_timeout_s must be > 0, drain_timeout_s >= 0");
  validate_model(c.model);
  // A fault is injected into worker processes only (a lane cannot survive the crash it injects); the core refuses
  // the header for a model whose executors are lanes, so one model in workers is enough -- say, the diarizer's
  // chaos beside a transcriber in lanes.
  STENO_CHECK(!c.enable_fault_injection || uses_worker_processes(c.model.share) ||
                  (!c.diarizer.dir.empty() && uses_worker_processes(c.diarizer.share)),
              "enable_fault_injection needs worker processes (share processes or mps, or a diarizer with "
              "diarizer_share processes or mps): a lane cannot survive the crash it injects");
  STENO_CHECK(c.diarizer.lanes >= 1, "diarizer_lanes must be >= 1, got {}", c.diarizer.lanes);
  STENO_CHECK(c.diarizer.max_batch >= 1, "diarizer_max_batch must be >= 1, got {}", c.diarizer.max_batch);
  STENO_CHECK((c.diarizer.share != ShareMode::kMps && c.diarizer.share != ShareMode::kGreen) ||
                  !c.model.parsed_device().is_cpu(),
              "diarizer_share {} needs a CUDA device (--device cuda[:N]), and --device is cpu",
              share_mode_name(c.diarizer.share));
  STENO_CHECK(c.diarizer.share != ShareMode::kGreen || c.diarizer.green_sms > 0,
              "diarizer_share green needs diarizer_green_sms, the SMs of each of its lanes (e.g. 16)");
  STENO_CHECK(c.diarizer.green_sms >= 0 && (c.diarizer.green_sms == 0 || c.diarizer.share == ShareMode::kGreen),
              "diarizer_green_sms applies to diarizer_share green only, got {}", c.diarizer.green_sms);

  if (!is_loopback_host(c.host) && c.api_key.empty())
    fail(ErrorCode::kInvalidArgument,
         "refusing to listen on '{}' without an API key: a non-loopback host needs --api-key KEY (or $STENO_API_KEY, "
         "or \"api_key\" in the config file), which clients then send as 'Authorization: Bearer KEY'",
         c.host);
}

}  // namespace steno::serve
