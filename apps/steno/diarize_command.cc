// `steno diarize`: audio files in, speaker segments out (RTTM or JSON). Offline, files are decoded, sorted by
// length and diarized in batches; each file's result is what it would be alone. With --streaming, each file runs
// through the streaming model chunk by chunk (bounded memory, any length), with progress on long files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include <unistd.h>

#include "audio_files.h"
#include "commands.h"
#include "compute_options.h"
#include "steno/core/error.h"
#include "steno/diar/diarize.h"
#include "steno/diar/streaming.h"

namespace steno::cli {
namespace {

struct DiarizeOptions {
  std::string diarizer;
  std::string format = "rttm";
  ComputeOptions compute;
  int batch_size = 4;
  std::optional<double> max_audio_seconds;  // default: 1200 offline, 24 hours streaming
  std::string streaming;                    // preset name; empty = offline
  std::vector<std::string> streaming_params;
  // Post-processing overrides of the model's config.json (NeMo's PostProcessingParams).
  std::optional<double> onset, offset, pad_onset, pad_offset, min_duration_on, min_duration_off;
  std::vector<std::string> files;
};

diar::PostProcessingParams postprocessing(const DiarizeOptions& opt, diar::PostProcessingParams p) {
  for (const auto& [value, field] : {std::pair{&opt.onset, &p.onset}, {&opt.offset, &p.offset},
                                     {&opt.pad_onset, &p.pad_onset}, {&opt.pad_offset, &p.pad_offset},
                                     {&opt.min_duration_on, &p.min_duration_on},
                                     {&opt.min_duration_off, &p.min_duration_off}})
    if (value->has_value()) *field = **value;
  p.validate("--");
  return p;
}

// An RTTM file id: the file's name without its extension, whitespace made '_' (RTTM fields are space-separated).
std::string file_id(const std::string& path) {
  std::string id = std::filesystem::path(path).stem().string();
  std::replace_if(id.begin(), id.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }, '_');
  return id.empty() ? "audio" : id;
}

// The progress of one long file on stderr: a live line on a terminal, otherwise a line per tenth.
class FileProgress {
 public:
  FileProgress(const std::string& path, double total_s) : path_(path), total_s_(total_s), tty_(isatty(STDERR_FILENO)) {}
  void operator()(double done_s, double total_s) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const int tenth = static_cast<int>(10 * done_s / total_s);
    if (tty_) {
      std::fprintf(stderr, "\r%s: %.0f / %.0f s, RTFx %.1f   ", path_.c_str(), done_s, total_s,
                   wall > 0 ? done_s / wall : 0.0);
      if (done_s >= total_s) std::fputc('\n', stderr);
    } else if (total_s_ >= 300 && tenth > last_tenth_) {
      std::fprintf(stderr, "steno: %s: %d%% (%.0f of %.0f s, RTFx %.1f)\n", path_.c_str(), 10 * tenth, done_s,
                   total_s, wall > 0 ? done_s / wall : 0.0);
    }
    last_tenth_ = tenth;
    std::fflush(stderr);
  }

 private:
  std::string path_;
  double total_s_;
  bool tty_;
  int last_tenth_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

diar::SortformerModulesConfig streaming_params(const DiarizeOptions& opt, const diar::SortformerModel& model) {
  diar::SortformerModulesConfig p =
      diar::streaming_preset(model.config().sortformer_modules, opt.streaming.empty() ? "model" : opt.streaming);
  for (const std::string& a : opt.streaming_params) diar::set_streaming_parameter(p, a);
  return p;
}

int run_diarize(const DiarizeOptions& opt) {
  STENO_CHECK(opt.format == "rttm" || opt.format == "json", "--format must be rttm or json, got '{}'", opt.format);
  STENO_CHECK(opt.batch_size >= 1, "--batch-size must be >= 1");
  Compute compute = make_compute(opt.compute);
  const std::string dir = opt.diarizer.empty() ? default_diarizer_dir() : opt.diarizer;
  const auto start = std::chrono::steady_clock::now();
  const auto model = diar::SortformerModel::load(dir, {compute.device, compute.dtype});
  const double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const diar::PostProcessingParams params = postprocessing(opt, model->config().postprocessing);
  const bool streaming = !opt.streaming.empty() || !opt.streaming_params.empty();
  const diar::SortformerModulesConfig stream_params = streaming_params(opt, *model);
  if (streaming) diar::SortformerStream(*model, stream_params);  // refuses bad parameters before any decoding

  audio::AudioLimits limits;
  limits.max_duration_s = opt.max_audio_seconds.value_or(streaming ? 24 * 3600.0 : 1200.0);
  const std::vector<InputFile> files = decode_files(opt.files, limits, model->sample_rate());
  const std::vector<size_t> order = by_length(files);
  std::vector<diar::Diarization> results(files.size());

  const auto run_start = std::chrono::steady_clock::now();
  double audio_done = 0;
  int64_t chunks = 0;
  for (size_t i = 0; streaming && i < order.size(); ++i) {
    const InputFile& file = files[order[i]];
    if (!file.error.empty()) continue;
    const double seconds = static_cast<double>(file.samples.size()) / model->sample_rate();
    FileProgress progress(file.path, seconds);
    diar::StreamingDiarization s = diar::diarize_streaming(*model, compute.ctx, file.samples, stream_params,
                                                           std::ref(progress));
    chunks += s.chunks;
    results[order[i]] = diar::diarization_from_probs(std::move(s.probs), s.frames, seconds, *model, params);
    audio_done += seconds;
  }
  for (size_t begin = 0; !streaming && begin < order.size(); begin += opt.batch_size) {
    const size_t end = std::min(order.size(), begin + opt.batch_size);
    std::vector<std::span<const float>> clips;
    for (size_t j = begin; j < end; ++j) clips.emplace_back(files[order[j]].samples);
    std::vector<diar::Diarization> out = diar::diarize(*model, compute.ctx, clips, params);
    for (size_t j = begin; j < end; ++j) {
      results[order[j]] = std::move(out[j - begin]);
      audio_done += results[order[j]].audio_seconds;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    show_progress(end, order.size(), audio_done, wall);
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  const int failures = report_file_problems(files);

  if (opt.format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < files.size(); ++i) {
      if (!files[i].error.empty()) {
        out.push_back({{"file", files[i].path}, {"error", files[i].error}});
        continue;
      }
      nlohmann::ordered_json one = {{"file", files[i].path}};
      one.update(diar::to_json(results[i]));
      one["warnings"] = files[i].warnings;
      out.push_back(std::move(one));
    }
    nlohmann::ordered_json doc = {
        {"diarizer", model->directory()},
        {"postprocessing", params.to_json()},
        {"files", out},
        {"summary",
         {{"audio_seconds", audio_done},
          {"wall_seconds", wall_s},
          {"rtfx", wall_s > 0 ? audio_done / wall_s : 0.0},
          {"model_load_ms", load_ms},
          {"threads", compute.ctx.num_threads()},
          {"device", compute.device.str()},
          {"dtype", dtype_name(compute.dtype)},
          {"failed", failures}}}};
    if (streaming) {
      const diar::SortformerModulesConfig& p = stream_params;
      doc["streaming"] = {{"preset", opt.streaming.empty() ? "model" : opt.streaming},
                          {"latency_seconds", diar::streaming_latency_seconds(p, model->frame_seconds())},
                          {"chunk_len", p.chunk_len},
                          {"chunk_left_context", p.chunk_left_context},
                          {"chunk_right_context", p.chunk_right_context},
                          {"fifo_len", p.fifo_len},
                          {"spkcache_update_period", p.spkcache_update_period},
                          {"spkcache_len", p.spkcache_len},
                          {"chunks", chunks}};
    }
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    for (size_t i = 0; i < files.size(); ++i)
      if (files[i].error.empty()) std::fputs(diar::to_rttm(file_id(files[i].path), results[i]).c_str(), stdout);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

Run add_diarize_command(CLI::App& app) {
  auto opt = std::make_shared<DiarizeOptions>();
  CLI::App* cmd = app.add_subcommand("diarize", "Who spoke when: speaker segments of audio files (Sortformer)");
  cmd->add_option("files", opt->files, "Audio files")->required();
  cmd->add_option("--diarizer", opt->diarizer,
                  "Sortformer model directory (default: $STENO_DIARIZER or the bundled diarizer)");
  cmd->add_option("-f,--format", opt->format, "Output: rttm (NIST RTTM lines) or json (segments per file, timings)");
  add_compute_options(cmd, opt->compute);
  cmd->add_option("-b,--batch-size", opt->batch_size, "Files per batch (sorted by length first)");
  cmd->add_option("--max-audio-seconds", opt->max_audio_seconds,
                  "Refuse files longer than this (default 1200 offline, where attention is quadratic in length; "
                  "24 hours with --streaming)");
  auto* st = cmd->add_option_group("streaming", "Streaming Sortformer: chunk by chunk, any length, bounded memory");
  st->add_option("--streaming", opt->streaming,
                 "Diarize in streaming mode with a preset: 1.04s, 30.4s (the published latencies) or model (the "
                 "model's own config.json)");
  st->add_option("--streaming-param", opt->streaming_params,
                 "Set one streaming parameter, FIELD=VALUE (chunk_len, chunk_left_context, chunk_right_context, "
                 "fifo_len, spkcache_update_period, spkcache_len, ...; in 80 ms frames); repeatable")
      ->allow_extra_args(false);
  auto* pp = cmd->add_option_group("post-processing", "Override the model's post-processing (NeMo's parameters)");
  pp->add_option("--onset", opt->onset, "Probability above which a speaker's segment starts");
  pp->add_option("--offset", opt->offset, "Probability below which it ends");
  pp->add_option("--pad-onset", opt->pad_onset, "Seconds added before each segment");
  pp->add_option("--pad-offset", opt->pad_offset, "Seconds added after each segment");
  pp->add_option("--min-duration-on", opt->min_duration_on, "Drop segments shorter than this (seconds)");
  pp->add_option("--min-duration-off", opt->min_duration_off, "Fill gaps shorter than this (seconds)");
  return [opt] { return run_diarize(*opt); };
}

}  // namespace steno::cli
