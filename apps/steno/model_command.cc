// `steno model info DIR` (transcription and diarization models),
// `steno model random --like CONFIG_OR_DIR --out DIR [--token-rate R --calibrate-on FILE...]` and
// `steno model import FILE.nemo --out DIR [--frontend-version 2.4|2.5] [--dtype ...] [--postprocessing FILE]`,
// `steno model pull NAME [--revision R] [--hub-url URL] [--file F] [--out DIR]` (the Hugging Face Hub) and
// `steno model list` (the model cache).
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "commands.h"
#include "steno/asr/random_model.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"
#include "steno/diar/sortformer_tools.h"
#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/nemo/hub_pull.h"
#include "steno/nemo/import.h"
#include "steno/nemo/model_cache.h"

namespace steno::cli {
namespace {

struct ModelOptions {
  std::string dir;
  std::string like, out, dtype = "f32";
  uint64_t seed = 0;
  double token_rate = 0;
  std::vector<std::string> calibration_audio;
  int threads = 0;
  std::string device = "cpu";
  std::string calibrate_dtype = "f32";
  std::string nemo, frontend_version, postprocessing, name;
  std::string repo, revision = "main", hub_url, file;
};

// Download progress on stderr: on a terminal one line redrawn (percent, MB, MB/s) a few times a second; otherwise
// (a log) a line every 5 seconds.
class DownloadProgress {
 public:
  DownloadProgress() : tty_(::isatty(STDERR_FILENO) == 1) {}
  ~DownloadProgress() { end_line(); }
  // Ends the redrawn line, so that a log line starts on a line of its own.
  void end_line() {
    if (tty_ && drawn_) std::fputc('\n', stderr);
    drawn_ = false;
  }
  void operator()(uint64_t have, uint64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (!started_) {
      started_ = true;
      start_ = last_ = now;
      first_ = have;
      return;
    }
    if (now - last_ < (tty_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(5000)) && have != total)
      return;
    last_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? (have - first_) / 1e6 / seconds : 0;
    const std::string percent = total ? fmt::format("{:5.1f}% ", 100.0 * have / total) : "";
    const std::string of = total ? fmt::format(" of {:.1f}", total / 1e6) : "";
    if (tty_) {
      std::fprintf(stderr, "\r%s%.1f%s MB, %.1f MB/s   ", percent.c_str(), have / 1e6, of.c_str(), rate);
      drawn_ = true;
    } else {
      std::fprintf(stderr, "steno: downloaded %s%.1f%s MB, %.1f MB/s\n", percent.c_str(), have / 1e6, of.c_str(),
                   rate);
    }
  }

 private:
  bool tty_;
  bool started_ = false, drawn_ = false;
  uint64_t first_ = 0;
  std::chrono::steady_clock::time_point start_, last_;
};

void log_line(const std::string& line) { std::fprintf(stderr, "steno: %s\n", line.c_str()); }

std::string size_text(uint64_t bytes) {
  return bytes >= 1'000'000'000 ? fmt::format("{:.2f} GB", bytes / 1e9) : fmt::format("{:.1f} MB", bytes / 1e6);
}

int list_cache() {
  const auto root = nemo::cache_root();
  const std::vector<nemo::CacheEntry> entries = nemo::list_cached_models(root);
  if (entries.empty()) {
    std::printf("no models in the cache (%s)\n", root.c_str());
    return 0;
  }
  std::printf("%-28s %-12s %10s  %-18s %s\n", "name", "sha256", "size", "type", "source");
  for (const nemo::CacheEntry& e : entries)
    std::printf("%-28s %-12s %10s  %-18s %s\n", e.name.c_str(), e.sha256.substr(0, 12).c_str(),
                size_text(e.bytes).c_str(), e.model_type.c_str(), e.source.empty() ? "-" : e.source.c_str());
  std::printf("(%s)\n", root.c_str());
  return 0;
}

}  // namespace

Run add_model_command(CLI::App& app) {
  auto opt = std::make_shared<ModelOptions>();
  CLI::App* cmd =
      app.add_subcommand("model", "Inspect model directories, make random-weight ones, import NeMo checkpoints");
  cmd->require_subcommand(1);
  CLI::App* info = cmd->add_subcommand("info", "Describe a model directory (reads headers only)");
  info->add_option("dir", opt->dir, "Model directory, or a .nemo checkpoint (imported into the cache on first use)")
      ->required();
  CLI::App* random = cmd->add_subcommand(
      "random", "Write a model with the shapes of a config and random weights (for benchmarks of models whose "
                "weights are not at hand)");
  random->add_option("--like", opt->like, "A config.json-style file (e.g. configs/parakeet-tdt-0.6b-v2.json) or a model directory")
      ->required();
  random->add_option("--out", opt->out, "Output directory")->required();
  random->add_option("--seed", opt->seed, "Random seed");
  random->add_option("--dtype", opt->dtype, "Weight storage: f32, f16 or bf16");
  auto* rate = random->add_option(
      "--token-rate", opt->token_rate,
      "Calibrate the joint so that greedy decoding of the --calibrate-on audio emits this many tokens per encoder "
      "frame (Parakeet-TDT emits about 0.4 on speech); without it random weights emit a token at every step or "
      "none at all (see calibrate_joint in random_model.h)");
  auto* audio =
      random->add_option("--calibrate-on", opt->calibration_audio, "Speech clips (any audio file) for --token-rate");
  rate->needs(audio);
  audio->needs(rate);
  random->add_option("--threads", opt->threads, "CPU threads for the calibration (0 = all cores)");
  random->add_option("--device", opt->device,
                     "Where the calibration's encoder pass and trial decodes run: cpu or cuda[:N] (seconds instead of "
                     "minutes for a 0.6b model)");
  random->add_option("--calibrate-dtype", opt->calibrate_dtype,
                     "The encoder's precision in the calibration: f32, or on CUDA the precision the model will be "
                     "benchmarked in (bf16, f16, fp8), so that it emits --token-rate there");
  CLI::App* import_cmd = cmd->add_subcommand(
      "import", "Turn a NeMo checkpoint (.nemo: FastConformer-TDT or Sortformer) into a model directory, as "
                "tools/convert_nemo.py does, without Python");
  import_cmd->add_option("nemo", opt->nemo, "The .nemo file")->required();
  import_cmd->add_option("--out", opt->out, "Output directory (must not exist, or be empty)")->required();
  import_cmd->add_option("--frontend-version", opt->frontend_version,
                     "NeMo front end to reproduce: 2.4 or 2.5 (default: from the checkpoint's nemo_version)");
  import_cmd->add_option("--dtype", opt->dtype, "Weight storage: f32, f16 or bf16");
  import_cmd->add_option("--postprocessing", opt->postprocessing,
                     "Sortformer: a NeMo post-processing yaml whose parameters go into config.json");
  import_cmd->add_option("--name", opt->name, "The model's name in config.json (default: the file's name)");
  CLI::App* pull = cmd->add_subcommand(
      "pull", "Download a NeMo checkpoint (.nemo) from the Hugging Face Hub and import it into the model cache (or "
              "--out DIR); resumes an interrupted download, checks the Hub's SHA-256");
  pull->add_option("name", opt->repo, "The repository, e.g. nvidia/parakeet-tdt-0.6b-v2")->required();
  pull->add_option("--revision", opt->revision, "Branch, tag or commit");
  pull->add_option("--hub-url", opt->hub_url, "The Hub's URL (default: $HF_ENDPOINT, else https://huggingface.co)");
  pull->add_option("--file", opt->file, "Which .nemo of the repository, when it has several");
  pull->add_option("--out", opt->out, "Import into this directory instead of the cache (must not exist, or be empty)");
  CLI::App* list = cmd->add_subcommand("list", "List the models in the cache ($STENO_CACHE_DIR, else "
                                               "$XDG_CACHE_HOME/steno, else ~/.cache/steno)");
  return [opt, info, random, import_cmd, pull, list]() -> int {
    if (list->parsed()) return list_cache();
    if (pull->parsed()) {
      nemo::PullOptions o;
      o.repo = opt->repo;
      o.revision = opt->revision;
      o.endpoint = opt->hub_url;
      o.file = opt->file;
      o.out = opt->out;
      o.cache = nemo::cache_root();
      auto progress = std::make_shared<DownloadProgress>();
      o.log = [progress](const std::string& line) {
        progress->end_line();
        log_line(line);
      };
      o.progress = [progress](uint64_t have, uint64_t total) { (*progress)(have, total); };
      const nemo::PullResult r = nemo::pull_model(o);
      progress.reset();
      std::printf("%s\n", r.dir.c_str());
      return 0;
    }
    if (import_cmd->parsed()) {
      nemo::ImportOptions o;
      if (!opt->frontend_version.empty()) o.frontend_version = opt->frontend_version;
      o.dtype = opt->dtype;
      if (!opt->postprocessing.empty()) o.postprocessing = opt->postprocessing;
      o.name = opt->name;
      const nemo::ImportResult r = nemo::import_nemo(opt->nemo, opt->out, o);
      std::printf("wrote %s (%s, frontend %s, dtype %s)\n%s\n", opt->out.c_str(), r.model_type.c_str(),
                  r.frontend_version.c_str(), opt->dtype.c_str(), r.summary.c_str());
      return 0;
    }
    if (info->parsed()) {
      opt->dir = model_path(opt->dir);
      const bool diarizer = asr::model_type_of(opt->dir) == "sortformer";
      std::printf("%s\n", (diarizer ? diar::describe_sortformer(opt->dir) : asr::describe_model(opt->dir)).c_str());
      return 0;
    }
    if (random->parsed()) {
      if (asr::model_type_of(opt->like) == "sortformer") {
        STENO_CHECK(opt->calibration_audio.empty(), "--token-rate and --calibrate-on apply to ASR models only");
        diar::write_random_sortformer(diar::load_sortformer_like(opt->like), opt->out, opt->seed,
                                      parse_dtype(opt->dtype));
        std::printf("%s\n", diar::describe_sortformer(opt->out).c_str());
        return 0;
      }
      const asr::ModelTemplate like = asr::load_model_like(opt->like);
      asr::write_random_model(like.config, opt->out, opt->seed, parse_dtype(opt->dtype), like.tokenizer);
      if (!opt->calibration_audio.empty()) {
        asr::JointCalibration cal;
        cal.tokens_per_frame = opt->token_rate;
        cal.seed = opt->seed;
        cal.threads = opt->threads;
        cal.device = parse_device(opt->device);
        cal.encoder_fp8_linears = opt->calibrate_dtype == "fp8";
        cal.encoder_dtype = cal.encoder_fp8_linears ? DType::kBF16 : parse_dtype(opt->calibrate_dtype);
        for (const std::string& f : opt->calibration_audio) cal.audio.push_back(audio::load_audio_file(f).samples);
        const asr::JointCalibrationResult r = asr::calibrate_joint(opt->out, cal);
        std::printf("joint calibrated on %zu clips: %s\n", cal.audio.size(), r.summary().c_str());
      }
      std::printf("%s\n", asr::describe_model(opt->out).c_str());
      return 0;
    }
    return 2;
  };
}

}  // namespace steno::cli
