#include "diarizer_options.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>

#include "commands.h"
#include "steno/core/error.h"

namespace steno::cli {
namespace {

// The progress of one long recording on stderr: a live line on a terminal, otherwise a line per tenth of
// recordings of five minutes or more.
class RecordingProgress {
 public:
  RecordingProgress(const std::string& label, double total_s)
      : label_(label), total_s_(total_s), tty_(isatty(STDERR_FILENO) != 0) {}
  void operator()(double done_s, double total_s) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rtfx = wall > 0 ? done_s / wall : 0.0;
    const int tenth = total_s > 0 ? static_cast<int>(10 * done_s / total_s) : 10;
    if (tty_) {
      std::fprintf(stderr, "\r%s: %.0f / %.0f s, RTFx %.1f   ", label_.c_str(), done_s, total_s, rtfx);
      if (done_s >= total_s) std::fputc('\n', stderr);
    } else if (total_s_ >= 300 && tenth > last_tenth_) {
      std::fprintf(stderr, "steno: %s: %d%% (%.0f of %.0f s, RTFx %.1f)\n", label_.c_str(), 10 * tenth, done_s,
                   total_s, rtfx);
    }
    last_tenth_ = tenth;
    std::fflush(stderr);
  }

 private:
  std::string label_;
  double total_s_;
  bool tty_;
  int last_tenth_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

void DiarizerOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--diarizer", diarizer,
                  "Sortformer model directory or .nemo checkpoint (default: $STENO_DIARIZER or the bundled diarizer)");
  auto* st = cmd->add_option_group("streaming", "Streaming Sortformer: chunk by chunk, any length, bounded memory");
  st->add_option("--streaming", streaming,
                 "Diarize in streaming mode with a preset: 1.04s, 30.4s (the published latencies) or model (the "
                 "model's own parameters; the default for a model trained for streaming)");
  st->add_option("--streaming-param", streaming_params,
                 "Set one streaming parameter, FIELD=VALUE (chunk_len, chunk_left_context, chunk_right_context, "
                 "fifo_len, spkcache_update_period, spkcache_len, ...; in 80 ms frames); repeatable")
      ->allow_extra_args(false);
  st->add_flag("--offline", offline, "Diarize whole recordings at once even with a streaming model");
  auto* pp = cmd->add_option_group("post-processing", "Override the model's post-processing (NeMo's parameters)");
  pp->add_option("--onset", onset, "Probability above which a speaker's segment starts");
  pp->add_option("--offset", offset, "Probability below which it ends");
  pp->add_option("--pad-onset", pad_onset, "Seconds added before each segment");
  pp->add_option("--pad-offset", pad_offset, "Seconds added after each segment");
  pp->add_option("--min-duration-on", min_duration_on, "Drop segments shorter than this (seconds)");
  pp->add_option("--min-duration-off", min_duration_off, "Fill gaps shorter than this (seconds)");
}

Diarizer::Diarizer(const DiarizerOptions& options, const Compute& compute) : options_(options) {
  const bool asked = !options.streaming.empty() || !options.streaming_params.empty();
  STENO_CHECK(!(options.offline && asked), "--offline and --streaming/--streaming-param exclude each other");
  const std::string dir = resolve_diarizer_dir(options.diarizer);
  const auto start = std::chrono::steady_clock::now();
  model_ = diar::SortformerModel::load(dir, {compute.device, compute.dtype});
  load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  post_ = model_->config().postprocessing;
  for (const auto& [value, field] : {std::pair{&options.onset, &post_.onset}, {&options.offset, &post_.offset},
                                     {&options.pad_onset, &post_.pad_onset}, {&options.pad_offset, &post_.pad_offset},
                                     {&options.min_duration_on, &post_.min_duration_on},
                                     {&options.min_duration_off, &post_.min_duration_off}})
    if (value->has_value()) *field = **value;
  post_.validate("--");

  streaming_ = asked || (model_->config().streaming_mode && !options.offline);
  preset_ = options.streaming.empty() ? "model" : options.streaming;
  stream_params_ = diar::streaming_preset(model_->config().sortformer_modules, preset_);
  for (const std::string& a : options.streaming_params) diar::set_streaming_parameter(stream_params_, a);
  if (streaming_) diar::SortformerStream(*model_, stream_params_);  // refuses bad parameters before any audio
}

std::vector<diar::Diarization> Diarizer::run(ops::Context& ctx, const std::vector<std::span<const float>>& clips,
                                             const std::vector<std::string>& labels) {
  if (!streaming_) return diar::diarize(*model_, ctx, clips, post_);
  std::vector<diar::Diarization> out;
  for (size_t i = 0; i < clips.size(); ++i) {
    const double seconds = static_cast<double>(clips[i].size()) / model_->sample_rate();
    RecordingProgress progress(i < labels.size() ? labels[i] : "audio", seconds);
    diar::StreamingDiarization s =
        diar::diarize_streaming(*model_, ctx, clips[i], stream_params_, std::ref(progress));
    chunks_ += s.chunks;
    out.push_back(diar::diarization_from_probs(std::move(s.probs), s.frames, seconds, *model_, post_));
  }
  return out;
}

nlohmann::ordered_json Diarizer::settings_json() const {
  nlohmann::ordered_json out = {{"diarizer", model_->directory()}, {"postprocessing", post_.to_json()}};
  if (streaming_) {
    const diar::SortformerModulesConfig& p = stream_params_;
    out["streaming"] = {{"preset", preset_},
                        {"latency_seconds", diar::streaming_latency_seconds(p, model_->frame_seconds())},
                        {"chunk_len", p.chunk_len},
                        {"chunk_left_context", p.chunk_left_context},
                        {"chunk_right_context", p.chunk_right_context},
                        {"fifo_len", p.fifo_len},
                        {"spkcache_update_period", p.spkcache_update_period},
                        {"spkcache_len", p.spkcache_len},
                        {"chunks", chunks_}};
  }
  return out;
}

}  // namespace steno::cli
