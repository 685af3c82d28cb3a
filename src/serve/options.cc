// The option table (options.h): each setting of config.h once, with the codec of its type.
#include "steno/serve/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "steno/core/error.h"

namespace steno::serve {
namespace {

// How a value of type T is read from a flag's text or a JSON value, and shown.
template <typename T>
struct Codec;

template <>
struct Codec<std::string> {
  static constexpr OptionKind kind = OptionKind::kText;
  static std::string parse(std::string_view text, std::string_view) { return std::string(text); }
  static std::string from_json(const nlohmann::json& v) { return v.get<std::string>(); }
  static std::string show(const std::string& v) { return v; }
};

template <>
struct Codec<int> {
  static constexpr OptionKind kind = OptionKind::kInteger;
  static int parse(std::string_view text, std::string_view flag) {
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
      fail(ErrorCode::kInvalidArgument, "--{}: '{}' is not an integer", flag, text);
    return v;
  }
  static int from_json(const nlohmann::json& v) {
    if (!v.is_number_integer()) throw nlohmann::json::type_error::create(302, "not an integer", &v);
    return v.get<int>();
  }
  static std::string show(int v) { return std::to_string(v); }
};

template <>
struct Codec<double> {
  static constexpr OptionKind kind = OptionKind::kNumber;
  static double parse(std::string_view text, std::string_view flag) {
    const std::string s(text);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
      fail(ErrorCode::kInvalidArgument, "--{}: '{}' is not a number", flag, text);
    return v;
  }
  static double from_json(const nlohmann::json& v) {
    if (!v.is_number()) throw nlohmann::json::type_error::create(302, "not a number", &v);
    return v.get<double>();
  }
  static std::string show(double v) { return fmt::format("{:g}", v); }
};

template <>
struct Codec<bool> {
  static constexpr OptionKind kind = OptionKind::kFlag;
  static bool parse(std::string_view text, std::string_view flag) {
    if (text == "true") return true;
    if (text == "false") return false;
    fail(ErrorCode::kInvalidArgument, "--{}: '{}' is not true or false", flag, text);
  }
  static bool from_json(const nlohmann::json& v) { return v.get<bool>(); }  // get<bool> refuses numbers
  static std::string show(bool v) { return v ? "true" : "false"; }
};

// A list: comma-separated on the command line ("" is the empty list), an array of strings in the file.
template <>
struct Codec<std::vector<std::string>> {
  static constexpr OptionKind kind = OptionKind::kList;
  static std::vector<std::string> parse(std::string_view text, std::string_view flag) {
    std::vector<std::string> out;
    while (!text.empty()) {
      const size_t comma = text.find(',');
      std::string_view item = text.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (item.empty()) fail(ErrorCode::kInvalidArgument, "--{}: an empty name in '{}'", flag, text);
      out.emplace_back(item);
      if (comma == std::string_view::npos) break;
      text.remove_prefix(comma + 1);
    }
    return out;
  }
  static std::vector<std::string> from_json(const nlohmann::json& v) {
    if (!v.is_array()) throw nlohmann::json::type_error::create(302, "not an array", &v);
    return v.get<std::vector<std::string>>();
  }
  static std::string show(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ",")); }
};

template <>
struct Codec<ShareMode> {
  static constexpr OptionKind kind = OptionKind::kText;
  static ShareMode parse(std::string_view text, std::string_view flag) {
    const std::optional<ShareMode> mode = parse_share_mode(text);
    if (!mode) fail(ErrorCode::kInvalidArgument, "--{}: '{}' is not lanes, processes, mps or green", flag, text);
    return *mode;
  }
  static ShareMode from_json(const nlohmann::json& v) {
    const std::optional<ShareMode> mode = parse_share_mode(v.get<std::string>());
    if (!mode) throw nlohmann::json::type_error::create(302, "not lanes, processes, mps or green", &v);
    return *mode;
  }
  static std::string show(ShareMode v) { return share_mode_name(v); }
};

// `--model` and `models`: "DIR" or "asr=DIR" (the transcription model), "diarizer=DIR" (the diarization model).
void assign_model(ServeConfig& c, std::string_view text, std::string_view flag) {
  const size_t eq = text.find('=');
  const std::string_view role = eq == std::string_view::npos ? std::string_view("asr") : text.substr(0, eq);
  const std::string_view dir = eq == std::string_view::npos ? text : text.substr(eq + 1);
  if (role == "asr")
    c.model.dir = dir;
  else if (role == "diarizer")
    c.diarizer.dir = dir;
  else
    fail(ErrorCode::kInvalidArgument, "--{}: '{}' is not DIR, asr=DIR or diarizer=DIR", flag, text);
}

// The `models` list: "asr=DIR" and "diarizer=DIR" (comma-separated on the command line), or in the file an array of
// those strings or of {"role": "asr" | "diarizer", "dir": DIR}.
Option models_option(const std::string& group) {
  Option o;
  o.name = "models";
  o.kind = OptionKind::kList;
  o.group = group;
  o.value_name = "ROLE=DIR,...";
  o.help = "The served models together: asr=DIR and diarizer=DIR (the same as --model asr=DIR --model diarizer=DIR; "
           "in the config file an array of those, or of {\"role\", \"dir\"}); a DIR may be a .nemo checkpoint";
  o.parse = [](ServeConfig& c, std::string_view text) {
    for (const std::string& item : Codec<std::vector<std::string>>::parse(text, "models"))
      assign_model(c, item, "models");
  };
  o.from_json = [](ServeConfig& c, const nlohmann::json& v) {
    if (!v.is_array()) fail(ErrorCode::kInvalidArgument, "config: setting 'models' must be an array ({})", v.dump());
    for (const nlohmann::json& m : v) {
      if (m.is_string()) {
        assign_model(c, m.get<std::string>(), "models");
      } else if (m.is_object() && m.contains("role") && m.contains("dir") && m["role"].is_string() &&
                 m["dir"].is_string() && m.size() == 2) {
        assign_model(c, m["role"].get<std::string>() + "=" + m["dir"].get<std::string>(), "models");
      } else {
        fail(ErrorCode::kInvalidArgument,
             "config: a 'models' entry must be \"ROLE=DIR\" or {{\"role\", \"dir\"}}, got {}", m.dump());
      }
    }
  };
  o.show = [](const ServeConfig& c) {
    std::string out = c.model.dir.empty() ? "" : "asr=" + c.model.dir;
    if (!c.diarizer.dir.empty()) out += (out.empty() ? "" : ",") + std::string("diarizer=") + c.diarizer.dir;
    return out;
  };
  return o;
}

struct Entry {
  std::string name;
  std::vector<std::string> other_names;
  std::string value_name;
  std::string help;
};

// An option over the field `field(config)` returns (a generic lambda, so that it serves const and non-const).
template <typename Field>
Option bind(const std::string& group, Entry e, Field field) {
  using T = std::remove_cvref_t<decltype(field(std::declval<ServeConfig&>()))>;
  Option o;
  o.name = e.name;
  o.other_names = std::move(e.other_names);
  o.kind = Codec<T>::kind;
  o.group = group;
  o.value_name = std::move(e.value_name);
  o.help = std::move(e.help);
  const std::string name = o.name;
  o.parse = [field, name](ServeConfig& c, std::string_view text) { field(c) = Codec<T>::parse(text, name); };
  o.from_json = [field, name](ServeConfig& c, const nlohmann::json& v) {
    try {
      field(c) = Codec<T>::from_json(v);
    } catch (const nlohmann::json::exception&) {
      fail(ErrorCode::kInvalidArgument, "config: setting '{}' has the wrong type ({})", config_key(name), v.dump());
    }
  };
  o.show = [field](const ServeConfig& c) { return Codec<T>::show(field(c)); };
  return o;
}

#define STENO_FIELD(path) [](auto& c) -> auto& { return c.path; }

std::vector<Option> make_options() {
  std::vector<Option> t;
  const std::string net = "Network";
  t.push_back(bind(net, {"host", {}, "HOST", "Address the HTTP and gRPC front ends listen on; any address but a loopback "
                                              "one needs an API key"},
                   STENO_FIELD(host)));
  t.push_back(bind(net, {"port", {"p"}, "PORT", "HTTP port (0 picks a free one)"}, STENO_FIELD(port)));
  t.push_back(bind(net, {"grpc-port", {}, "PORT", "Also serve KServe v2 over gRPC on this port (0: off; Triton's is 8001)"},
                   STENO_FIELD(grpc_port)));
  t.push_back(bind(net, {"api-key", {}, "KEY", "Require 'Authorization: Bearer KEY' on every request but the health "
                                                "probes (also $STENO_API_KEY, which keeps it out of `ps`)"},
                   STENO_FIELD(api_key)));
  t.push_back(bind(net, {"max-body-mb", {}, "MB", "Largest request body that is no audio upload (HTTP: JSON) and "
                                                  "message (gRPC), in MiB, held in memory; larger is 413"},
                   STENO_FIELD(max_body_mb)));
  t.push_back(bind(net, {"max-upload-mb", {}, "MB", "Largest audio upload (HTTP multipart, KServe binary) in MiB; larger "
                                                    "is 413. Never held whole in memory: see upload-buffer-mb"},
                   STENO_FIELD(max_upload_mb)));
  t.push_back(bind(net, {"upload-buffer-mb", {}, "MB", "An upload past this many MiB is spooled to an unnamed temporary "
                                                       "file (deleted when the request ends) instead of memory"},
                   STENO_FIELD(upload_buffer_mb)));
  t.push_back(bind(net, {"upload-dir", {}, "DIR", "Where uploads are spooled (\"\": $TMPDIR, else /tmp)"},
                   STENO_FIELD(upload_dir)));
  t.push_back(bind(net, {"io-threads", {}, "N", "HTTP I/O threads"}, STENO_FIELD(io_threads)));
  t.push_back(bind(net, {"worker-threads", {}, "N", "Threads parsing requests and decoding their audio, per front "
                                                    "end (0: half the machine's threads, at least 2)"},
                   STENO_FIELD(worker_threads)));
  t.push_back(bind(net, {"read-timeout-s", {}, "S", "A request must arrive whole within this many seconds of its first "
                                                     "byte (else 408)"},
                   STENO_FIELD(read_timeout_s)));
  t.push_back(bind(net, {"idle-timeout-s", {}, "S", "An idle keep-alive connection is closed after this many seconds"},
                   STENO_FIELD(idle_timeout_s)));
  t.push_back(bind(net, {"drain-timeout-s", {}, "S", "On SIGTERM, how long requests in flight may take to be answered"},
                   STENO_FIELD(drain_timeout_s)));

  const std::string model = "Model";
  Option model_dir = bind(model, {"model", {"m"}, "DIR", "Model directory (\"\": $STENO_MODEL or the bundled model) "
                                                        "or .nemo checkpoint (imported into the model cache on first "
                                                        "use, as everywhere a DIR is taken); "
                                                        "asr=DIR the same, diarizer=DIR the diarizer's (--diarizer): "
                                                        "--model asr=A --model diarizer=B serves both"},
                          STENO_FIELD(model.dir));
  model_dir.parse = [](ServeConfig& c, std::string_view text) { assign_model(c, text, "model"); };
  model_dir.from_json = [](ServeConfig& c, const nlohmann::json& v) {
    if (!v.is_string()) fail(ErrorCode::kInvalidArgument, "config: setting 'model' has the wrong type ({})", v.dump());
    assign_model(c, v.get<std::string>(), "model");
  };
  t.push_back(std::move(model_dir));
  t.push_back(models_option(model));
  t.push_back(bind(model, {"model-name", {}, "NAME", "Name clients use for the model (\"\": the directory's name)"},
                   STENO_FIELD(model.name)));
  t.push_back(bind(model, {"aliases", {}, "NAMES", "Other names clients may use for the model, comma-separated "
                                                    "(\"\": none), on every protocol; OpenAI apps send whisper-1"},
                   STENO_FIELD(model.aliases)));
  t.push_back(bind(model, {"device", {}, "DEVICES", "cpu, cuda[:N], or a list: cuda:0,1 or cuda:all (every GPU) or "
                                                     "cpu,cpu; each entry has executors and weights of its own, "
                                                     "all fed from the model's one queue"}, STENO_FIELD(model.device)));
  t.push_back(bind(model, {"dtype", {}, "DTYPE", "Compute dtype: f32 on the CPU; f32, f16 or bf16 on CUDA (\"\": bf16 "
                                                  "there), or fp8 (bf16 with the encoder's linear layers in FP8; "
                                                  "compute capability 8.9+)"},
                   STENO_FIELD(model.dtype)));
  t.push_back(bind(model, {"max-audio-seconds", {}, "S", "Longest audio accepted; longer is refused (413) from its "
                                                          "header or its first decoded seconds"},
                   STENO_FIELD(model.max_audio_seconds)));
  t.push_back(bind(model, {"vad", {}, "MODE", "Voice activity detection (Silero VAD): transcribe only the speech, so "
                                               "silence and noise cost nothing and give no words; off, on, or auto "
                                               "(audio over 2 minutes)"},
                   STENO_FIELD(model.vad)));
  t.push_back(bind(model, {"long-audio-seconds", {}, "S", "Audio longer than this runs in linear-cost long-form modes: "
                                                          "the ASR with local attention, the diarizer streaming"},
                   STENO_FIELD(model.long_audio_seconds)));
  t.push_back(bind(model, {"long-attention", {}, "W", "Half-width in encoder frames of the ASR's local attention for "
                                                      "long audio (NeMo's rel_pos_local_attn [W, W])"},
                   STENO_FIELD(model.long_attention)));
  t.push_back(bind(model, {"piece-seconds", {}, "S", "A transcription longer than this runs as pieces of at most S "
                                                     "seconds, cut in pauses and queued beside other requests' work, "
                                                     "its words streamed as they are made (0: whole, long-form)"},
                   STENO_FIELD(model.piece_seconds)));
  t.push_back(bind(model, {"pieces-in-flight", {}, "N", "Pieces of one request queued or running at once (0: one "
                                                        "per executor on a CPU, executors x max batch / 2 on a GPU)"},
                   STENO_FIELD(model.pieces_in_flight)));

  const std::string dec = "Decoding";
  t.push_back(bind(dec, {"decoding", {}, "MODE", "greedy (NeMo's) or beam (beam search, on the host) (\"\": "
                                                 "beam when lm is given, else the model's default: greedy, or "
                                                 "what its config.json names)"},
                   STENO_FIELD(model.decoding)));
  t.push_back(bind(dec, {"beam-size", {}, "N", "Hypotheses beam search keeps (0: the model's, else 8)"},
                   STENO_FIELD(model.beam_size)));
  t.push_back(bind(dec, {"lm", {}, "FILE", "Token n-gram LM fused into beam search: ARPA or ARPA.gz over the model's "
                                           "tokens, token i written as the character U+(i+100), as NeMo's token LMs "
                                           "are (e.g. the bundled model's lm.arpa.gz)"},
                   STENO_FIELD(model.lm)));
  t.push_back(bind(dec, {"lm-alpha", {}, "A", "Weight of the LM's log probability (with lm)"},
                   STENO_FIELD(model.lm_alpha)));
  t.push_back(bind(dec, {"lm-beta", {}, "B", "Score added per token (with lm)"}, STENO_FIELD(model.lm_beta)));
  t.push_back(bind(dec, {"lexicon", {}, "FILE", "Word list (one word a line, plain or gzip): beam search pays "
                                                "unknown-word-penalty for each word outside it (the bundled model "
                                                "names its own)"},
                   STENO_FIELD(model.lexicon)));
  t.push_back(bind(dec, {"unknown-word-penalty", {}, "P", "What each word outside the lexicon costs a hypothesis "
                                                          "(with lexicon)"},
                   STENO_FIELD(model.unknown_word_penalty)));

  const std::string exec = "Executors";
  t.push_back(bind(exec, {"share", {}, "MODE", "How the executors share the device: lanes (threads over one weight "
                                                "copy), processes (worker processes), mps (worker processes under CUDA "
                                                "MPS), green (lanes on CUDA green contexts)"},
                   STENO_FIELD(model.share)));
  t.push_back(bind(exec, {"executors", {"lanes"}, "N", "Executors: lanes or worker processes"},
                   STENO_FIELD(model.executors)));
  t.push_back(bind(exec, {"threads-per-lane", {"threads-per-executor"}, "N",
                          "CPU threads per executor (0: the machine's threads shared out among them)"},
                   STENO_FIELD(model.threads_per_executor)));
  t.push_back(bind(exec, {"gemm", {}, "LIB", "CPU GEMM library: onednn or openblas"}, STENO_FIELD(model.gemm)));

  const std::string batching = "Batching";
  t.push_back(bind(batching, {"max-batch", {}, "N", "Largest batch"}, STENO_FIELD(model.max_batch)));
  t.push_back(bind(batching, {"max-queue-delay-ms", {}, "MS", "How long a request may wait for a fuller batch"},
                   STENO_FIELD(model.max_queue_delay_ms)));
  t.push_back(bind(batching, {"max-queue-size", {}, "N", "Queued requests before 429 (0: unbounded)"},
                   STENO_FIELD(model.max_queue_size)));
  t.push_back(bind(batching, {"spread-batches", {}, "", "Split a due batch evenly over the executors idle at that "
                                                          "moment instead of giving it all to one"},
                   STENO_FIELD(model.spread_batches)));

  const std::string workers = "Worker processes (share processes, mps)";
  t.push_back(bind(workers, {"heartbeat-ms", {}, "MS", "Heartbeat interval; a worker silent for 5 is hung, killed and "
                                                        "restarted"},
                   STENO_FIELD(model.heartbeat_ms)));
  t.push_back(bind(workers, {"batch-timeout-s", {}, "S", "A batch running longer than max(this, its seconds of audio) "
                                                          "is hung"},
                   STENO_FIELD(model.batch_timeout_s)));
  t.push_back(bind(workers, {"share-weights", {}, "", "On CUDA: the workers map one device copy of the weights instead "
                                                        "of loading one each; where the driver refuses, they load "
                                                        "their own and the log says why"},
                   STENO_FIELD(model.share_weights)));

  const std::string mps = "MPS (share mps)";
  t.push_back(bind(mps, {"mps-pipe-dir", {}, "DIR", "Join the MPS daemon on this pipe directory (\"\": start a private "
                                                     "one, stopped at exit)"},
                   STENO_FIELD(model.mps_pipe_dir)));
  t.push_back(bind(mps, {"mps-thread-percentage", {}, "PCT", "Each worker's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (0: 100 / "
                                                              "executors)"},
                   STENO_FIELD(model.mps_thread_percentage)));
  t.push_back(bind(mps, {"mps-pinned-mem-limit", {}, "LIMIT", "Each worker's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, e.g. 8G "
                                                               "or 0=8G (\"\": none)"},
                   STENO_FIELD(model.mps_pinned_mem_limit)));

  const std::string green = "Green contexts (share green)";
  t.push_back(bind(green, {"green-sms", {}, "N", "SMs of each lane's green context (a multiple of 8 on Hopper)"},
                   STENO_FIELD(model.green_sms)));

  const std::string diar = "Diarizer";
  t.push_back(bind(diar, {"diarizer", {}, "DIR", "Also serve this Sortformer diarizer (directory or .nemo; "
                                                  "POST /v1/audio/diarizations, and "
                                                  "speakers in transcripts: diarized_json, diarize=true), on the "
                                                  "model's device and dtype (\"\": none)"},
                   STENO_FIELD(diarizer.dir)));
  t.push_back(bind(diar, {"diarizer-lanes", {}, "N", "The diarizer's executors: lanes or worker processes"},
                   STENO_FIELD(diarizer.lanes)));
  t.push_back(bind(diar, {"diarizer-max-batch", {}, "N", "The diarizer's largest batch"},
                   STENO_FIELD(diarizer.max_batch)));
  t.push_back(bind(diar, {"diarizer-share", {}, "MODE", "How the diarizer's executors share the device: lanes, "
                                                        "processes (worker processes; --enable-fault-injection applies "
                                                        "to them too), mps (worker processes under CUDA MPS, each at "
                                                        "100 / diarizer-lanes % of the SMs) or green (lanes on CUDA "
                                                        "green contexts)"},
                   STENO_FIELD(diarizer.share)));
  t.push_back(bind(diar, {"diarizer-green-sms", {}, "N", "SMs of each diarizer lane's green context "
                                                          "(--diarizer-share green); with --share green too, "
                                                          "carved from the SMs the transcriber's lanes left"},
                   STENO_FIELD(diarizer.green_sms)));

  const std::string tests = "Tests";
  t.push_back(bind(tests, {"enable-fault-injection", {}, "", "TESTS ONLY: honour the X-Steno-Fault: "
                                                               "crash|hang|device-fault|oom request header (worker "
                                                               "processes of either model; a lanes model refuses "
                                                               "it); never on a server others use"},
                   STENO_FIELD(enable_fault_injection)));
  return t;
}

#undef STENO_FIELD

}  // namespace

const std::vector<Option>& serve_options() {
  static const std::vector<Option> table = make_options();
  return table;
}

std::string config_key(std::string_view name) {
  std::string key(name);
  for (char& c : key)
    if (c == '-') c = '_';
  return key;
}

std::string options_reference_markdown() {
  const ServeConfig defaults;
  std::string out =
      "# `steno serve` options\n\n"
      "Generated from the option table (`src/serve/options.cc`) by `steno serve --options-reference`; a test keeps\n"
      "this file equal to it. Every option is a flag (`--max-batch 8`) and a key of the JSON file given with\n"
      "`--config` (`{\"max_batch\": 8}`: the name with `_` for `-`). The file is read first, then `$STENO_API_KEY`,\n"
      "then the flags; each layer overrides the one before. An unknown key in the file is an error.\n";
  std::string group;
  for (const Option& o : serve_options()) {
    if (o.group != group) {
      group = o.group;
      out += fmt::format("\n## {}\n\n| flag | config key | default | |\n|---|---|---|---|\n", group);
    }
    std::string flag = o.kind == OptionKind::kFlag ? fmt::format("`--{}`", o.name)
                                                   : fmt::format("`--{} {}`", o.name, o.value_name);
    for (const std::string& other : o.other_names)
      flag += other.size() == 1 ? fmt::format(", `-{}`", other) : fmt::format(", `--{}`", other);
    const std::string value = o.show(defaults);
    std::string help;  // a '|' would end the table's cell
    for (char c : o.help) help += c == '|' ? std::string("\\|") : std::string(1, c);
    out += fmt::format("| {} | `{}` | {} | {} |\n", flag, config_key(o.name),
                       value.empty() ? "\"\"" : fmt::format("`{}`", value), help);
  }
  return out;
}

void apply_config_json(ServeConfig& config, std::string_view json_text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidArgument, "config is not valid JSON: {}", e.what());
  }
  STENO_CHECK(doc.is_object(), "config must be a JSON object of settings");
  for (const auto& [raw_key, value] : doc.items()) {
    const std::string key = config_key(raw_key);
    const Option* found = nullptr;
    for (const Option& o : serve_options()) {
      if (config_key(o.name) == key) found = &o;
      for (const std::string& other : o.other_names)
        if (other.size() > 1 && config_key(other) == key) found = &o;
    }
    if (found == nullptr) fail(ErrorCode::kInvalidArgument, "config: unknown setting '{}'", raw_key);
    found->from_json(config, value);
  }
}

std::string describe(const ServeConfig& config) {
  std::string out;
  for (const Option& o : serve_options()) {
    const std::string value = o.name == "api-key" ? (config.api_key.empty() ? "" : "(set)") : o.show(config);
    out += fmt::format("{} = {}\n", config_key(o.name), value.empty() ? "\"\"" : value);
  }
  return out;
}

}  // namespace steno::serve
