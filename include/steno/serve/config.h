// `steno serve`'s configuration: what the server listens on and how it serves its model. Every setting has one entry
// in the option table (options.h), from which the command-line flags, the config file's keys, `--help` and the
// option reference in docs/serve-options.md are all made; this header holds the values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "steno/asr/tdt_beam.h"
#include "steno/core/device.h"
#include "steno/core/dtype.h"

namespace steno::serve {

// How a model's executors share the device.
enum class ShareMode {
  kLanes,      // threads of the server, each with its own CUDA stream (or CPU threads), over one weight copy
  kProcesses,  // worker processes, each with its own copy, time-slicing the GPU
  kMps,        // worker processes as clients of a CUDA MPS daemon, each with a share of the SMs
  kGreen,      // lanes, each bound to a CUDA green context of its own SMs
};
const char* share_mode_name(ShareMode mode);  // "lanes", "processes", "mps", "green"
std::optional<ShareMode> parse_share_mode(std::string_view name);
inline bool uses_worker_processes(ShareMode mode) { return mode == ShareMode::kProcesses || mode == ShareMode::kMps; }

// The names OpenAI clients send for a transcription model, so that existing apps work unchanged.
std::vector<std::string> default_asr_aliases();

// One served model.
struct ModelConfig {
  std::string dir;   // the model directory; "" = the bundled model (the caller fills it in)
  std::string name;  // what clients call it; "" = the directory's last component
  std::vector<std::string> aliases = default_asr_aliases();  // other names clients may use for it
  // cpu | cuda[:N] | a list, each entry a device group of its own executors and weight copy: cuda:0,1 |
  // cuda:all | cpu,cpu (parse_devices in steno/core/device.h)
  std::string device = "cpu";
  std::string dtype;           // compute dtype: f32 on the CPU; f32, f16 or bf16 on CUDA ("" = bf16 there)
  double max_audio_seconds = 4 * 3600;  // longer audio is refused (413)
  // Audio longer than this runs in the engines' long-form modes, whose cost is linear in the length: the ASR
  // encoder with local attention of half-width long_attention (NeMo's rel_pos_local_attn, the same weights), the
  // diarizer streaming (Streaming Sortformer's 30.4 s operating point).
  double long_audio_seconds = 300;
  int long_attention = 128;
  // A transcription longer than piece_seconds runs as pieces of at most that long, cut in pauses, queued beside
  // other requests' work (0: whole, in the long-form mode above); at most pieces_in_flight of one request queued
  // or running at once (0: one per executor on a CPU, where a batch costs the sum of its clips; executors x
  // max_batch / 2 on a GPU).
  double piece_seconds = 10;
  int pieces_in_flight = 0;
  std::string vad = "auto";  // off | on | auto: transcribe only the speech (docs/vad.md)
  // Decoding: greedy (NeMo's) or beam search with an optional token LM (steno/asr/tdt_beam.h), in lanes only.
  // The LM's weights apply when there is an LM.
  std::string decoding;  // greedy | beam; "": beam when lm is given, else the model's default (decoding.strategy)
  int beam_size = 0;  // 0: the model's default (config.json decoding.beam_size), else 8
  std::string lm;
  double lm_alpha = asr::kDefaultLmAlpha, lm_beta = asr::kDefaultLmBeta;
  std::string lexicon;  // a word list; its penalty applies when there is one
  double unknown_word_penalty = asr::kDefaultUnknownWordPenalty;
  asr::DecodingRequest decoding_request() const;
  // Executors.
  ShareMode share = ShareMode::kLanes;
  int executors = 1;
  int threads_per_executor = 0;  // CPU threads each; 0: the machine's threads shared out among them
  std::string gemm = "onednn";   // the CPU GEMM library
  // Batching.
  int max_batch = 16;
  double max_queue_delay_ms = 10;
  bool spread_batches = false;
  int max_queue_size = 1024;
  // Worker processes (processes, mps).
  int heartbeat_ms = 1000;
  double batch_timeout_s = 30;
  bool share_weights = false;
  // MPS.
  std::string mps_pipe_dir;
  int mps_thread_percentage = 0;
  std::string mps_pinned_mem_limit;
  // Green contexts.
  int green_sms = 0;

  std::vector<Device> parsed_devices() const { return parse_devices(device); }
  Device parsed_device() const { return parsed_devices().front(); }  // the first (every entry is of its kind)
  DType compute_dtype() const;  // `dtype`, or the device's default (f32 on the CPU, bf16 on CUDA); bf16 for fp8
  // dtype "fp8": bf16 with the ASR encoder's linear layers in FP8 (asr::ModelOverrides::fp8_linears).
  bool fp8_linears() const;
};

// A Sortformer diarizer served beside the transcription model (POST /v1/audio/diarizations): on the transcription
// model's device and dtype, with its own batcher and executors: lanes (threads over one weight copy), worker
// processes, MPS clients (of the transcription model's daemon when it runs under MPS too: the two fleets then
// restart as one group after a fault), or lanes on green contexts of green_sms SMs each.
struct DiarizerServing {
  std::string dir;  // "" = no diarizer
  int lanes = 1;    // its executors: lanes or worker processes
  int max_batch = 8;
  ShareMode share = ShareMode::kLanes;
  int green_sms = 0;
};

struct ServeConfig {
  // Network and front ends.
  std::string host = "127.0.0.1";  // the HTTP and gRPC front ends both listen on it
  int port = 8000;
  int grpc_port = 0;    // KServe v2 over gRPC; 0 = off (Triton's port is 8001)
  std::string api_key;  // also from $STENO_API_KEY (keeps it off the command line, which `ps` shows)
  double max_body_mb = 64;         // a request that is no upload (JSON), and a gRPC message: held in memory
  double max_upload_mb = 2048;     // an audio upload (HTTP): spooled, never whole in memory
  double upload_buffer_mb = 32;    // an upload past this goes to an unnamed temporary file
  std::string upload_dir;          // where ("" = $TMPDIR, else /tmp)
  int io_threads = 2;
  int worker_threads = 0;          // 0: half the machine's threads, at least 2 (worker_threads_for())
  double read_timeout_s = 30;
  double idle_timeout_s = 60;
  double drain_timeout_s = 30;
  // Tests only: honour the X-Steno-Fault request tag (worker processes crash, hang, fault or run out of memory on
  // purpose). Refused unless the model runs in worker processes.
  bool enable_fault_injection = false;

  ModelConfig model;
  DiarizerServing diarizer;

  // Not options: what a program embedding the server may change. The binary worker processes run (`steno
  // worker`): this same program unless it is not `steno` (tests).
  std::string worker_executable = "/proc/self/exe";
};

// Applies the keys of a JSON object (the config file's text) over `config`: the option names with '_' for '-'
// ({"port": 8000, "max_body_mb": 32, ...}). kInvalidArgument naming the key for unknown keys (a typo must not
// silently leave a default in place), wrong types and malformed JSON.
void apply_config_json(ServeConfig& config, std::string_view json_text);
// Reads and applies a config file (kNotFound when it cannot be read).
void apply_config_file(ServeConfig& config, const std::string& path);

// Throws kInvalidArgument naming the setting at fault: ranges, the device and dtype, the sharing mode's settings,
// and the API-key rule: an API key is required whenever the host is not a loopback address, so that steno never
// listens on a network without one.
void validate(const ServeConfig& config);

// "localhost", 127.0.0.0/8, ::1 (and ::ffff:127.x). Anything else, 0.0.0.0 and :: included, is a network.
bool is_loopback_host(std::string_view host);

// Every setting, one "name = value" per line (the API key shown as set or not): logged at start-up.
std::string describe(const ServeConfig& config);

}  // namespace steno::serve
