// `steno serve`'s configuration: one JSON file plus command-line flags that override it, checked as a whole.
//
// The file's keys are the flags' long names with '_' for '-' ({"port": 8000, "max_body_mb": 32, ...}); an
// unknown key is an error (a typo must not silently leave a default in place). The rule that matters most: an API
// key is required whenever the host is not a loopback address, so that steno never listens on a network
// without one.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "steno/core/dtype.h"
#include "steno/serve/http/server.h"

namespace steno::serve::http {

struct ServeConfig {
  std::string host = "127.0.0.1";  // the HTTP and gRPC front ends both listen on it
  int port = 8000;
  int grpc_port = 0;  // KServe v2 over gRPC; 0 = off (Triton's port is 8001)
  std::string model;       // model directory; "" = the bundled model
  std::string model_name;  // the name clients use; "" = the directory's last component
  std::string api_key;     // also from $STENO_API_KEY (keeps it off the command line, which `ps` shows)
  double max_body_mb = 64;
  double max_audio_seconds = 1200;
  // The inference core (batcher and executors).
  // How the executors share the device (design.md §4): lanes (threads in this process), processes (worker
  // processes), mps (worker processes under CUDA MPS), green (lanes in CUDA green contexts).
  std::string share = "lanes";
  int lanes = 1;             // the executor count of every mode (--lanes, or its alias --executors)
  int threads_per_lane = 0;  // CPU threads per executor; 0: the machine's threads shared out among them
  // Worker processes: heartbeat interval (a worker silent for 5 is hung) and the floor of a batch's deadline
  // (which is max(this, the batch's seconds of audio)).
  int heartbeat_ms = 1000;
  double batch_timeout_s = 30;
  // Tests only: honour the X-Steno-Fault request header (worker processes crash, hang, fault or run out of memory
  // on purpose; steno/serve/fleet/fault_injection.h). Refused with --share lanes.
  bool enable_fault_injection = false;
  // --share mps: join the daemon on this pipe directory instead of starting a private one; each worker's
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (0: 100 / workers) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("" : none).
  std::string mps_pipe_dir;
  int mps_thread_percentage = 0;
  std::string mps_pinned_mem_limit;
  // --share processes or mps on CUDA: the workers map one device copy of the weights instead of one each
  // (steno/serve/fleet/shared_weights.h).
  bool share_weights = false;
  // --share green: SMs per lane's green context (a multiple of 8 on Hopper).
  int green_sms = 0;
  int max_batch = 16;
  double max_queue_delay_ms = 10;
  bool spread_batches = false;  // a due batch is split over the executors then idle (BatcherConfig)
  int max_queue_size = 1024;
  std::string gemm = "onednn";
  std::string device = "cpu";  // cpu | cuda[:N]: where every lane runs the model (one weight copy)
  std::string dtype;           // the compute dtype: f32 on the CPU; f32, f16 or bf16 on CUDA ("" = bf16 there)
  // The HTTP front end.
  int io_threads = 2;
  int worker_threads = 2;
  double read_timeout_s = 30;
  double idle_timeout_s = 60;
  double drain_timeout_s = 30;
  std::map<std::string, std::string> model_aliases;  // e.g. {"whisper-1": "steno-tdt-small-en"}
};

// Applies the keys of a JSON object (the config file's text) over `config`. kInvalidArgument naming the key for
// unknown keys, wrong types and malformed JSON.
void apply_config_json(ServeConfig& config, std::string_view json_text);

// Reads and applies a config file (kNotFound when it does not exist).
void apply_config_file(ServeConfig& config, const std::string& path);

// The compute dtype `dtype` names, or the device's default (f32 on the CPU, bf16 on CUDA).
DType compute_dtype(const ServeConfig& config);

// Throws kInvalidArgument naming the setting at fault: ranges, the device and dtype, and the API-key rule.
void validate(const ServeConfig& config);

// "localhost", 127.0.0.0/8, ::1 (and ::ffff:127.x). Anything else, 0.0.0.0 and :: included, is a network.
bool is_loopback_host(std::string_view host);

// The front end's options (the model name and aliases are applied by the caller, who knows the served names).
ServerOptions to_server_options(const ServeConfig& config);

}  // namespace steno::serve::http
