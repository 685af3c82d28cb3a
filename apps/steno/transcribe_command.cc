// `steno transcribe`: files in, transcripts out. Files are decoded, sorted by length and transcribed in batches.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "commands.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::cli {
namespace {

struct TranscribeOptions {
  std::string model;
  std::string format = "text";
  std::string device = "cpu";
  std::string dtype;  // default: f32 on the CPU, bf16 on CUDA
  std::string gemm = "onednn";
  int threads = 0;
  int batch_size = 8;
  int local_attention = 0;
  double max_audio_seconds = 1200;
  std::vector<std::string> files;
};

struct FileResult {
  std::string path;
  std::string error;  // empty when transcribed
  std::vector<std::string> warnings;  // decoded with a problem, e.g. truncated (DecodedAudio::warnings)
  asr::Transcript transcript;
  asr::StageTimings timings;  // of the batch the file was in
  double decode_ms = 0;
  size_t batch = 0;
};

nlohmann::json timed_json(const std::vector<asr::TimedText>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : items) out.push_back({{"text", w.text}, {"start", w.start}, {"end", w.end}});
  return out;
}

nlohmann::json result_json(const FileResult& r) {
  if (!r.error.empty()) return {{"file", r.path}, {"error", r.error}};
  const auto& t = r.timings;
  return {{"file", r.path},
          {"text", r.transcript.text},
          {"warnings", r.warnings},
          {"duration", r.transcript.audio_seconds},
          {"words", timed_json(r.transcript.words)},
          {"segments", timed_json(r.transcript.segments)},
          {"batch", r.batch},
          {"timings_ms",
           {{"audio_decode", r.decode_ms},
            {"features", t.features_ms},
            {"encoder", t.encoder_ms},
            {"decoder", t.decoder_ms},
            {"detokenize", t.detokenize_ms}}}};
}

// A one-line progress report on stderr when it is a terminal and the job is long enough to want one.
void show_progress(size_t done, size_t total, double audio_s, double wall_s) {
  if (total < 2 || !isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "\r%zu/%zu files, %.1f s of audio, RTFx %.1f   ", done, total, audio_s,
               wall_s > 0 ? audio_s / wall_s : 0.0);
  if (done == total) std::fputc('\n', stderr);
  std::fflush(stderr);
}

int run_transcribe(const TranscribeOptions& opt) {
  STENO_CHECK(opt.format == "text" || opt.format == "json", "--format must be text or json, got '{}'", opt.format);
  STENO_CHECK(opt.batch_size >= 1, "--batch-size must be >= 1");
  const Device device = parse_device(opt.device);
  const DType dtype = opt.dtype.empty() ? (device.is_cpu() ? DType::kF32 : DType::kBF16) : parse_dtype(opt.dtype);
  STENO_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16,
              "--dtype must be fp32, fp16 or bf16, got '{}'", opt.dtype);
  STENO_CHECK(device.is_cpu() == false || dtype == DType::kF32, "--dtype {}: the CPU engine computes in fp32",
              opt.dtype);
  ops::Context ctx = device.is_cpu() ? ops::Context::cpu(opt.threads, ops::parse_gemm_backend(opt.gemm))
                                     : ops::Context::cuda(device.index);

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

  // Decode everything first: a bad file fails alone, and sorting by length keeps batches tight.
  audio::AudioLimits limits;
  limits.max_duration_s = opt.max_audio_seconds;
  std::vector<FileResult> results(opt.files.size());
  std::vector<std::vector<float>> pcm(opt.files.size());
  for (size_t i = 0; i < opt.files.size(); ++i) {
    results[i].path = opt.files[i];
    const auto t0 = std::chrono::steady_clock::now();
    try {
      audio::DecodedAudio a = audio::load_audio_file(opt.files[i], limits);
      pcm[i] = std::move(a.samples);
      results[i].warnings = std::move(a.warnings);
      if (a.sample_rate != model->sample_rate())
        fail(ErrorCode::kInternal, "decoded audio is {} Hz, the model wants {}", a.sample_rate,
             model->sample_rate());
    } catch (const Error& e) {
      results[i].error = e.what();
    }
    results[i].decode_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::vector<size_t> order;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].error.empty()) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pcm[a].size() < pcm[b].size(); });

  const auto run_start = std::chrono::steady_clock::now();
  double audio_done = 0;
  size_t batch_index = 0;
  for (size_t begin = 0; begin < order.size(); begin += opt.batch_size, ++batch_index) {
    const size_t end = std::min(order.size(), begin + opt.batch_size);
    std::vector<std::span<const float>> clips;
    for (size_t j = begin; j < end; ++j) clips.emplace_back(pcm[order[j]]);
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

  int failures = 0;
  for (const auto& r : results) {
    for (const auto& w : r.warnings) std::fprintf(stderr, "steno: %s: warning: %s\n", r.path.c_str(), w.c_str());
    if (!r.error.empty()) {
      ++failures;
      std::fprintf(stderr, "steno: %s: %s\n", r.path.c_str(), r.error.c_str());
    }
  }
  if (opt.format == "json") {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& r : results) files.push_back(result_json(r));
    nlohmann::json doc = {{"model", model->directory()},
                          {"files", files},
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
    for (const auto& r : results) {
      if (!r.error.empty()) continue;
      if (results.size() == 1)
        std::printf("%s\n", r.transcript.text.c_str());
      else
        std::printf("%s\t%s\n", r.path.c_str(), r.transcript.text.c_str());
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
  cmd->add_option("--device", opt->device, "cpu, cuda or cuda:N (a build with the CUDA backend)");
  cmd->add_option("--dtype", opt->dtype, "Compute dtype: fp32 (the CPU's), fp16 or bf16 (CUDA; default bf16)");
  cmd->add_option("-t,--threads", opt->threads, "CPU threads (default: all cores, or $STENO_NUM_THREADS)");
  cmd->add_option("-b,--batch-size", opt->batch_size, "Files per batch (sorted by length first)");
  cmd->add_option("--gemm", opt->gemm, "CPU GEMM library: onednn or openblas");
  cmd->add_option("--local-attention", opt->local_attention,
                  "Use banded local attention of this half-width in encoder frames (NeMo rel_pos_local_attn; "
                  "e.g. 256 for long audio); 0 keeps the model's attention");
  cmd->add_option("--max-audio-seconds", opt->max_audio_seconds,
                  "Refuse files longer than this (full attention is quadratic in length)");
  return [opt] { return run_transcribe(*opt); };
}

}  // namespace steno::cli
