// `steno transcribe`: files in, transcripts out. Files are decoded, sorted by length and transcribed in batches.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "audio_files.h"
#include "commands.h"
#include "compute_options.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::cli {
namespace {

struct TranscribeOptions {
  std::string model;
  std::string format = "text";
  ComputeOptions compute;
  int batch_size = 8;
  int local_attention = 0;
  double max_audio_seconds = 1200;
  std::vector<std::string> files;
};

struct FileResult {
  asr::Transcript transcript;
  asr::StageTimings timings;  // of the batch the file was in
  size_t batch = 0;
};

nlohmann::json timed_json(const std::vector<asr::TimedText>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : items) out.push_back({{"text", w.text}, {"start", w.start}, {"end", w.end}});
  return out;
}

nlohmann::json result_json(const InputFile& f, const FileResult& r) {
  if (!f.error.empty()) return {{"file", f.path}, {"error", f.error}};
  const auto& t = r.timings;
  return {{"file", f.path},
          {"text", r.transcript.text},
          {"warnings", f.warnings},
          {"duration", r.transcript.audio_seconds},
          {"words", timed_json(r.transcript.words)},
          {"segments", timed_json(r.transcript.segments)},
          {"batch", r.batch},
          {"timings_ms",
           {{"audio_decode", f.decode_ms},
            {"features", t.features_ms},
            {"encoder", t.encoder_ms},
            {"decoder", t.decoder_ms},
            {"detokenize", t.detokenize_ms}}}};
}

int run_transcribe(const TranscribeOptions& opt) {
  STENO_CHECK(opt.format == "text" || opt.format == "json", "--format must be text or json, got '{}'", opt.format);
  STENO_CHECK(opt.batch_size >= 1, "--batch-size must be >= 1");
  Compute compute = make_compute(opt.compute);
  const Device device = compute.device;
  const DType dtype = compute.dtype;
  ops::Context& ctx = compute.ctx;

  const std::string model_dir = opt.model.empty() ? default_model_dir() : opt.model;
  asr::ModelOverrides overrides;
  overrides.local_attention = opt.local_attention;
  overrides.device = device;
  overrides.dtype = dtype;
  const auto start = std::chrono::steady_clock::now();
  auto model = asr::AsrModel::load(model_dir, overrides);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  asr::Transcriber transcriber(model, ctx);

  audio::AudioLimits limits;
  limits.max_duration_s = opt.max_audio_seconds;
  std::vector<InputFile> files = decode_files(opt.files, limits, model->sample_rate());
  std::vector<FileResult> results(files.size());
  const std::vector<size_t> order = by_length(files);

  const auto run_start = std::chrono::steady_clock::now();
  double audio_done = 0;
  size_t batch_index = 0;
  for (size_t begin = 0; begin < order.size(); begin += opt.batch_size, ++batch_index) {
    const size_t end = std::min(order.size(), begin + opt.batch_size);
    std::vector<std::span<const float>> clips;
    for (size_t j = begin; j < end; ++j) clips.emplace_back(files[order[j]].samples);
    asr::StageTimings timings;
    std::vector<asr::Transcript> out = transcriber.transcribe(clips, &timings);
    for (size_t j = begin; j < end; ++j) {
      FileResult& r = results[order[j]];
      r.transcript = std::move(out[j - begin]);
      r.timings = timings;
      r.batch = batch_index;
      audio_done += r.transcript.audio_seconds;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    show_progress(end, order.size(), audio_done, wall);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();

  const int failures = report_file_problems(files);
  if (opt.format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < files.size(); ++i) out.push_back(result_json(files[i], results[i]));
    nlohmann::json doc = {{"model", model->directory()},
                          {"files", out},
                          {"summary",
                           {{"audio_seconds", audio_done},
                            {"wall_seconds", wall_s},
                            {"rtfx", wall_s > 0 ? audio_done / wall_s : 0.0},
                            {"model_load_ms", load_ms},
                            {"threads", ctx.num_threads()},
                            {"device", device.str()},
                            {"dtype", dtype_name(dtype)},
                            {"batch_size", opt.batch_size},
                            {"failed", failures}}}};
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    for (size_t i = 0; i < files.size(); ++i) {
      if (!files[i].error.empty()) continue;
      if (files.size() == 1)
        std::printf("%s\n", results[i].transcript.text.c_str());
      else
        std::printf("%s\t%s\n", files[i].path.c_str(), results[i].transcript.text.c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

Run add_transcribe_command(CLI::App& app) {
  auto opt = std::make_shared<TranscribeOptions>();
  CLI::App* cmd = app.add_subcommand("transcribe", "Transcribe audio files (WAV, FLAC, OGG/Vorbis, Opus, MP3)");
  cmd->add_option("files", opt->files, "Audio files")->required();
  cmd->add_option("-m,--model", opt->model, "Model directory (default: $STENO_MODEL or the bundled model)");
  cmd->add_option("-f,--format", opt->format, "Output: text (one line per file) or json (words, segments, timings)");
  add_compute_options(cmd, opt->compute);
  cmd->add_option("-b,--batch-size", opt->batch_size, "Files per batch (sorted by length first)");
  cmd->add_option("--local-attention", opt->local_attention,
                  "Use banded local attention of this half-width in encoder frames (NeMo rel_pos_local_attn; "
                  "e.g. 256 for long audio); 0 keeps the model's attention");
  cmd->add_option("--max-audio-seconds", opt->max_audio_seconds,
                  "Refuse files longer than this (full attention is quadratic in length)");
  return [opt] { return run_transcribe(*opt); };
}

}  // namespace steno::cli
