// `steno model info DIR` (transcription and diarization models),
// `steno model random --like CONFIG_OR_DIR --out DIR [--token-rate R --calibrate-on FILE...]` and
// `steno model import FILE.nemo --out DIR [--frontend-version 2.4|2.5] [--dtype ...] [--postprocessing FILE]`.
#include <cstdio>

#include "commands.h"
#include "steno/asr/random_model.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"
#include "steno/diar/sortformer_tools.h"
#include "steno/core/device.h"
#include "steno/core/dtype.h"
#include "steno/nemo/import.h"

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
  std::string nemo, frontend_version, postprocessing, name;
};

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
  return [opt, info, random, import_cmd]() -> int {
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
