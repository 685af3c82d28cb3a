#include "steno/serve/http/serve_config.h"

#include <arpa/inet.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "steno/core/device.h"
#include "steno/core/error.h"

namespace steno::serve::http {
namespace {

using Setter = std::function<void(ServeConfig&, const nlohmann::json&)>;

template <typename T>
Setter set(T ServeConfig::*field) {
  return [field](ServeConfig& c, const nlohmann::json& v) { c.*field = v.get<T>(); };
}

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"host", set(&ServeConfig::host)},
      {"port", set(&ServeConfig::port)},
      {"grpc_port", set(&ServeConfig::grpc_port)},
      {"model", set(&ServeConfig::model)},
      {"model_name", set(&ServeConfig::model_name)},
      {"api_key", set(&ServeConfig::api_key)},
      {"max_body_mb", set(&ServeConfig::max_body_mb)},
      {"max_audio_seconds", set(&ServeConfig::max_audio_seconds)},
      {"share", set(&ServeConfig::share)},
      {"lanes", set(&ServeConfig::lanes)},
      {"executors", set(&ServeConfig::lanes)},  // the same count under design.md's name
      {"heartbeat_ms", set(&ServeConfig::heartbeat_ms)},
      {"batch_timeout_s", set(&ServeConfig::batch_timeout_s)},
      {"enable_fault_injection", set(&ServeConfig::enable_fault_injection)},
      {"mps_pipe_dir", set(&ServeConfig::mps_pipe_dir)},
      {"mps_thread_percentage", set(&ServeConfig::mps_thread_percentage)},
      {"mps_pinned_mem_limit", set(&ServeConfig::mps_pinned_mem_limit)},
      {"share_weights", set(&ServeConfig::share_weights)},
      {"green_sms", set(&ServeConfig::green_sms)},
      {"threads_per_lane", set(&ServeConfig::threads_per_lane)},
      {"max_batch", set(&ServeConfig::max_batch)},
      {"max_queue_delay_ms", set(&ServeConfig::max_queue_delay_ms)},
      {"spread_batches", set(&ServeConfig::spread_batches)},
      {"max_queue_size", set(&ServeConfig::max_queue_size)},
      {"gemm", set(&ServeConfig::gemm)},
      {"device", set(&ServeConfig::device)},
      {"dtype", set(&ServeConfig::dtype)},
      {"io_threads", set(&ServeConfig::io_threads)},
      {"worker_threads", set(&ServeConfig::worker_threads)},
      {"read_timeout_s", set(&ServeConfig::read_timeout_s)},
      {"idle_timeout_s", set(&ServeConfig::idle_timeout_s)},
      {"drain_timeout_s", set(&ServeConfig::drain_timeout_s)},
      {"model_aliases", set(&ServeConfig::model_aliases)},
  };
  return table;
}

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace

void apply_config_json(ServeConfig& config, std::string_view json_text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidArgument, "config is not valid JSON: {}", e.what());
  }
  STENO_CHECK(doc.is_object(), "config must be a JSON object of settings");
  for (const auto& [raw_key, value] : doc.items()) {
    std::string key = raw_key;
    for (char& c : key)
      if (c == '-') c = '_';
    const auto it = setters().find(key);
    if (it == setters().end()) fail(ErrorCode::kInvalidArgument, "config: unknown setting '{}'", raw_key);
    try {
      it->second(config, value);
    } catch (const nlohmann::json::exception&) {
      fail(ErrorCode::kInvalidArgument, "config: setting '{}' has the wrong type ({})", raw_key, value.dump());
    }
  }
}

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

DType compute_dtype(const ServeConfig& c) {
  if (!c.dtype.empty()) return parse_dtype(c.dtype);
  return parse_device(c.device).is_cpu() ? DType::kF32 : DType::kBF16;
}

void validate(const ServeConfig& c) {
  STENO_CHECK(!c.host.empty(), "host is empty");
  STENO_CHECK(c.port >= 0 && c.port <= 65535, "port must be in 0..65535, got {}", c.port);
  STENO_CHECK(c.grpc_port >= 0 && c.grpc_port <= 65535, "grpc_port must be in 0..65535 (0 = no gRPC), got {}",
              c.grpc_port);
  STENO_CHECK(c.grpc_port == 0 || c.grpc_port != c.port, "grpc_port and port are both {}: give gRPC its own port",
              c.port);
  STENO_CHECK(c.max_body_mb > 0 && c.max_body_mb <= 4096, "max_body_mb must be in (0, 4096], got {}", c.max_body_mb);
  STENO_CHECK(c.max_audio_seconds > 0, "max_audio_seconds must be > 0, got {}", c.max_audio_seconds);
  STENO_CHECK(c.share == "lanes" || c.share == "processes" || c.share == "mps" || c.share == "green",
              "share must be lanes, processes, mps or green, got '{}'", c.share);
  STENO_CHECK(c.lanes >= 1, "lanes (executors) must be >= 1, got {}", c.lanes);
  STENO_CHECK(c.mps_thread_percentage >= 0 && c.mps_thread_percentage <= 100,
              "mps_thread_percentage must be in 0..100 (0: 100 / executors), got {}", c.mps_thread_percentage);
  STENO_CHECK(c.share == "mps" || (c.mps_pipe_dir.empty() && c.mps_thread_percentage == 0 && c.mps_pinned_mem_limit.empty()),
              "mps_pipe_dir, mps_thread_percentage and mps_pinned_mem_limit apply to share mps only (share is '{}')",
              c.share);
  STENO_CHECK(c.share != "green" || c.green_sms > 0, "share green needs green_sms, the SMs of each lane (e.g. 32)");
  STENO_CHECK(c.green_sms >= 0 && (c.green_sms == 0 || c.share == "green"),
              "green_sms applies to share green only (share is '{}'), got {}", c.share, c.green_sms);
  STENO_CHECK(c.heartbeat_ms >= 10, "heartbeat_ms must be >= 10, got {}", c.heartbeat_ms);
  STENO_CHECK(c.batch_timeout_s > 0, "batch_timeout_s must be > 0, got {}", c.batch_timeout_s);
  STENO_CHECK(!c.enable_fault_injection || (c.share != "lanes" && c.share != "green"),
              "enable_fault_injection needs worker processes (share processes or mps): a lane cannot survive the "
              "crash it injects");
  STENO_CHECK(c.threads_per_lane >= 0, "threads_per_lane must be >= 0, got {}", c.threads_per_lane);
  STENO_CHECK(c.max_batch >= 1, "max_batch must be >= 1, got {}", c.max_batch);
  STENO_CHECK(c.max_queue_delay_ms >= 0, "max_queue_delay_ms must be >= 0, got {}", c.max_queue_delay_ms);
  STENO_CHECK(c.max_queue_size >= 0, "max_queue_size must be >= 0, got {}", c.max_queue_size);
  STENO_CHECK(c.io_threads >= 1 && c.worker_threads >= 1, "io_threads and worker_threads must be >= 1");
  const Device device = parse_device(c.device);  // throws naming the text
  const DType dtype = compute_dtype(c);
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "dtype must be f32, f16 or bf16, got {}", c.dtype);
  STENO_CHECK(!device.is_cpu() || dtype == DType::kF32, "dtype {}: the CPU engine computes in f32", c.dtype);
  STENO_CHECK(!c.share_weights || ((c.share == "processes" || c.share == "mps") && !device.is_cpu()),
              "share_weights shares one device copy of the weights among worker processes: it needs share processes "
              "or mps on a CUDA device (share is '{}', device {}); lanes and green share one copy already",
              c.share, device.str());
  STENO_CHECK(c.read_timeout_s > 0 && c.idle_timeout_s > 0 && c.drain_timeout_s >= 0,
              "read_timeout_s and idle_timeout_s must be > 0, drain_timeout_s >= 0");
  if (!is_loopback_host(c.host) && c.api_key.empty())
    fail(ErrorCode::kInvalidArgument,
         "refusing to listen on '{}' without an API key: a non-loopback host needs --api-key KEY (or $STENO_API_KEY, "
         "or \"api_key\" in the config file), which clients then send as 'Authorization: Bearer KEY'",
         c.host);
}

ServerOptions to_server_options(const ServeConfig& c) {
  ServerOptions o;
  o.host = c.host;
  o.port = static_cast<uint16_t>(c.port);
  o.io_threads = c.io_threads;
  o.worker_threads = c.worker_threads;
  o.max_body_bytes = static_cast<size_t>(c.max_body_mb * 1024 * 1024);
  o.max_audio_seconds = c.max_audio_seconds;
  o.read_timeout = ms(c.read_timeout_s);
  o.idle_timeout = ms(c.idle_timeout_s);
  o.drain_timeout = ms(c.drain_timeout_s);
  o.api_key = c.api_key;
  o.model_aliases = c.model_aliases;
  o.max_batch_size = c.max_batch;
  o.max_queue_delay_ms = c.max_queue_delay_ms;
  o.instance_count = c.lanes;
  o.enable_fault_injection = c.enable_fault_injection;
  return o;
}

}  // namespace steno::serve::http
