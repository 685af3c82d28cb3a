// `steno diarize`: audio files in, speaker segments out (RTTM or JSON). Offline, files are decoded, sorted by
// length and diarized in batches; each file's result is what it would be alone. Streaming (--streaming, or a
// model trained for it), each file runs chunk by chunk: any length in bounded memory, with progress.
#include <algorithm>
#include <cmath>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "audio_files.h"
#include "steno/asr/pieces.h"
#include "steno/vad/vad.h"
#include "commands.h"
#include "compute_options.h"
#include "diarizer_options.h"
#include "steno/core/error.h"

namespace steno::cli {
namespace {

struct DiarizeOptions {
  DiarizerOptions diarizer;
  std::string format = "rttm";
  ComputeOptions compute;
  int batch_size = 4;
  std::optional<double> max_audio_seconds;  // default: 1200 offline, 24 hours streaming
  std::vector<std::string> files;
  std::string vad = "auto";
};

// With the VAD on (any --vad but off), a segment over audio silent throughout goes, as the server's
// (serve/diarization_gate.h: the same 10 ms frames around the segment, the same -60 dBFS).
void drop_silent_segments(diar::Diarization& d, std::span<const float> pcm, int rate) {
  const size_t frame = static_cast<size_t>(rate) / 100;
  std::vector<diar::SpeakerSegment> kept;
  for (const diar::SpeakerSegment& s : d.segments) {
    const size_t from = std::min(pcm.size(), static_cast<size_t>(std::max(0.0, std::floor(s.start * 100))) * frame);
    const size_t to = std::min(pcm.size(), static_cast<size_t>(std::max(0.0, std::ceil(s.end * 100))) * frame);
    if (!asr::is_silent(pcm.subspan(from, to - from))) kept.push_back(s);
  }
  d.segments = std::move(kept);
}

// An RTTM file id: the file's name without its extension, whitespace made '_' (RTTM fields are space-separated).
std::string file_id(const std::string& path) {
  std::string id = std::filesystem::path(path).stem().string();
  std::replace_if(id.begin(), id.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }, '_');
  return id.empty() ? "audio" : id;
}

int run_diarize(const DiarizeOptions& opt) {
  STENO_CHECK(opt.format == "rttm" || opt.format == "json", "--format must be rttm or json, got '{}'", opt.format);
  STENO_CHECK(opt.batch_size >= 1, "--batch-size must be >= 1");
  const vad::VadMode vad_mode = vad::parse_vad_mode(opt.vad);
  Compute compute = make_compute(opt.compute);
  Diarizer diarizer(opt.diarizer, compute);

  audio::AudioLimits limits;
  limits.max_duration_s = opt.max_audio_seconds.value_or(diarizer.streaming() ? 24 * 3600.0 : 1200.0);
  const std::vector<InputFile> files = decode_files(opt.files, limits, diarizer.model().sample_rate());
  // --gemm auto: the library by the audio's length (after the model's load here: oneDNN's kernels, when chosen,
  // are made at the first GEMM rather than beside the load -- the rule's own figures are the transcriber's).
  choose_gemm(compute, total_seconds(files, diarizer.model().sample_rate()));
  const std::vector<size_t> order = by_length(files);
  std::vector<diar::Diarization> results(files.size());

  const auto run_start = std::chrono::steady_clock::now();
  double audio_done = 0;
  const size_t batch = diarizer.streaming() ? 1 : static_cast<size_t>(opt.batch_size);
  for (size_t begin = 0; begin < order.size(); begin += batch) {
    const size_t end = std::min(order.size(), begin + batch);
    std::vector<std::span<const float>> clips;
    std::vector<std::string> labels;
    for (size_t j = begin; j < end; ++j) {
      clips.emplace_back(files[order[j]].samples);
      labels.push_back(files[order[j]].path);
    }
    std::vector<diar::Diarization> out = diarizer.run(compute.ctx, clips, labels);
    for (size_t j = begin; j < end; ++j) {
      results[order[j]] = std::move(out[j - begin]);
      if (vad_mode != vad::VadMode::kOff)
        drop_silent_segments(results[order[j]], files[order[j]].samples, diarizer.model().sample_rate());
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
    nlohmann::ordered_json doc = diarizer.settings_json();
    doc["files"] = out;
    doc["summary"] = {{"audio_seconds", audio_done},
                      {"wall_seconds", wall_s},
                      {"rtfx", wall_s > 0 ? audio_done / wall_s : 0.0},
                      {"model_load_ms", diarizer.load_ms()},
                      {"threads", compute.ctx.num_threads()},
                      {"device", compute.device.str()},
                      {"gemm", gemm_name(compute)},
                      {"dtype", dtype_name(compute.dtype)},
                      {"failed", failures}};
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
  cmd->add_option("--vad", opt->vad,
                  "off: the model's segments as they are (NeMo's); on or auto (default): segments over digital "
                  "silence are dropped, as steno serve does")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  cmd->add_option("-f,--format", opt->format, "Output: rttm (NIST RTTM lines) or json (segments per file, timings)");
  add_compute_options(cmd, opt->compute);
  cmd->add_option("-b,--batch-size", opt->batch_size, "Files per batch offline (sorted by length first)");
  cmd->add_option("--max-audio-seconds", opt->max_audio_seconds,
                  "Refuse files longer than this (default 1200 offline, where attention is quadratic in length; "
                  "24 hours streaming)");
  opt->diarizer.add_to(cmd);
  return [opt] { return run_diarize(*opt); };
}

}  // namespace steno::cli
