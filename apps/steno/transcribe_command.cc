// `steno transcribe`: files in, transcripts out. Files are decoded, sorted by length, cut into pieces as the server
// cuts them (piece_schedule.h) and transcribed in batches; one file's words are printed as they are made. With
// --diarize the diarizer runs over the same files first and every word gets a speaker
// (diar/speaker_attribution.h): the transcript comes out as speaker turns, each printed once it is finished.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "audio_files.h"
#include "commands.h"
#include "compute_options.h"
#include "decoding_options.h"
#include "diarizer_options.h"
#include "piece_schedule.h"
#include "speech_cuts.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"
#include "steno/diar/speaker_attribution.h"

namespace steno::cli {
namespace {

struct TranscribeOptions {
  std::string model;
  std::string format = "text";
  ComputeOptions compute;
  asr::DecodingRequest decoding;
  int batch_size = 8;
  int local_attention = 0;
  double max_audio_seconds = 4 * 3600;
  double piece_seconds = 10;
  std::vector<std::string> files;
  bool diarize = false;
  DiarizerOptions diarizer;
  std::string vad = "auto";
};

struct FileResult {
  asr::Transcript transcript;
  asr::StageTimings timings;  // of the batch the file was in
  size_t batch = 0;
  // With --diarize:
  std::vector<diar::SpeakerTurn> turns;
  std::vector<int> speakers;  // active speakers of the diarization
  double diarize_ms = 0;      // of the diarizer batch the file was in
};

nlohmann::ordered_json timed_json(const std::vector<asr::TimedText>& items) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& w : items) out.push_back({{"text", w.text}, {"start", w.start}, {"end", w.end}});
  return out;
}

nlohmann::ordered_json speaker_words_json(const std::vector<diar::SpeakerTurn>& turns) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& turn : diar::turns_to_json(turns))
    for (const auto& w : turn["words"]) out.push_back(w);
  return out;
}

nlohmann::ordered_json result_json(const InputFile& f, const FileResult& r, bool diarized) {
  if (!f.error.empty()) return {{"file", f.path}, {"error", f.error}};
  const auto& t = r.timings;
  nlohmann::ordered_json out = {{"file", f.path},
                                {"text", r.transcript.text},
                                {"warnings", f.warnings},
                                {"duration", r.transcript.audio_seconds}};
  if (diarized) {  // the segments are speaker turns and every word has its speaker
    nlohmann::ordered_json speakers = nlohmann::ordered_json::array();
    for (const int s : r.speakers) speakers.push_back(diar::speaker_label(s));
    out["speakers"] = speakers;
    out["segments"] = diar::turns_to_json(r.turns);
    out["words"] = speaker_words_json(r.turns);
  } else {
    out["words"] = timed_json(r.transcript.words);
    out["segments"] = timed_json(r.transcript.segments);
  }
  out["batch"] = r.batch;
  out["timings_ms"] = {{"audio_decode", f.decode_ms},
                       {"features", t.features_ms},
                       {"encoder", t.encoder_ms},
                       {"decoder", t.decoder_ms},
                       {"detokenize", t.detokenize_ms}};
  if (diarized) out["timings_ms"]["diarize"] = r.diarize_ms;
  return out;
}

int run_transcribe(const TranscribeOptions& opt) {
  STENO_CHECK(opt.format == "text" || opt.format == "json", "--format must be text or json, got '{}'", opt.format);
  STENO_CHECK(opt.batch_size >= 1, "--batch-size must be >= 1");
  const vad::VadMode vad_mode = vad::parse_vad_mode(opt.vad);
  Compute compute = make_compute(opt.compute);
  const Device device = compute.device;
  const DType dtype = compute.dtype;
  ops::Context& ctx = compute.ctx;

  const std::string model_dir = resolve_model_dir(opt.model);
  // The audio first, at the rate the model's config names: its length chooses the CPU's GEMM library (--gemm auto),
  // whose kernels are then made while the model loads.
  const int config_rate = asr::AsrModel::read_config(model_dir).preprocessor.sample_rate;
  audio::AudioLimits limits;
  limits.max_duration_s = opt.max_audio_seconds;
  std::vector<InputFile> files = decode_files(opt.files, limits, config_rate);
  choose_gemm(compute, total_seconds(files, config_rate));
  asr::ModelOverrides overrides;
  overrides.local_attention = opt.local_attention;
  overrides.device = device;
  overrides.dtype = dtype;
  overrides.fp8_linears = compute.fp8_linears;
  const auto start = std::chrono::steady_clock::now();
  auto model = asr::AsrModel::load(model_dir, overrides);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  asr::Transcriber transcriber(model, ctx);
  transcriber.set_beam(opt.decoding.resolve(model->config(), model_dir));
  std::optional<Diarizer> diarizer;
  if (opt.diarize) {
    diarizer.emplace(opt.diarizer, compute);
    STENO_CHECK(diarizer->model().sample_rate() == model->sample_rate(),
                "the diarizer takes {} Hz audio and the ASR model {} Hz", diarizer->model().sample_rate(),
                model->sample_rate());
  }

  std::vector<FileResult> results(files.size());
  const std::vector<size_t> order = by_length(files);
  // With the VAD, a file's clip is its speech alone; a file with none is not run at all (an empty transcript).
  const std::vector<std::optional<vad::SpeechAudio>> speech = cut_to_speech(files, vad_mode, model->sample_rate());
  const int rate = model->sample_rate();
  const double frame_seconds = model->frame_seconds();

  const auto run_start = std::chrono::steady_clock::now();
  // Who spoke, first: each file's speaker probabilities are then at hand as its words come.
  std::vector<diar::Diarization> diarized(files.size());
  const size_t diar_batch = diarizer && diarizer->streaming() ? 1 : static_cast<size_t>(opt.batch_size);
  for (size_t begin = 0; diarizer && begin < order.size(); begin += diar_batch) {
    const size_t end = std::min(order.size(), begin + diar_batch);
    std::vector<std::span<const float>> clips;
    std::vector<std::string> labels;
    for (size_t j = begin; j < end; ++j) {
      clips.emplace_back(files[order[j]].samples);
      labels.push_back(files[order[j]].path);
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<diar::Diarization> d = diarizer->run(ctx, clips, labels);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (size_t j = begin; j < end; ++j) {
      diarized[order[j]] = std::move(d[j - begin]);
      results[order[j]].diarize_ms = ms;
    }
  }

  // The words: every file's clip cut into pieces as the server cuts it, run in batches in time order.
  std::vector<std::span<const float>> clips(files.size());
  for (size_t f = 0; f < files.size(); ++f)
    if (files[f].error.empty())
      clips[f] = speech[f] ? std::span<const float>(speech[f]->pcm) : std::span<const float>(files[f].samples);
  PieceSchedule schedule(clips, order, rate, opt.piece_seconds, frame_seconds);
  // File f's transcript so far (all of it once done), on the recording's timeline.
  const auto on_recording = [&](size_t f) {
    asr::Transcript t = schedule.joined(f);
    if (const auto& cut = speech[f]) vad::restore_timeline(t, *cut, rate, frame_seconds);
    if (!speech[f]) t.audio_seconds = static_cast<double>(files[f].samples.size()) / rate;
    return t;
  };
  const auto turns_of = [&](size_t f, const asr::Transcript& t) {
    const diar::Diarization& d = diarized[f];
    return diar::speaker_transcript(t, d.probs, d.frames, d.num_speakers, diarizer->model().frame_seconds());
  };
  // One file as text: its words (diarized: its finished turns) printed as they are made.
  const bool progressive = files.size() == 1 && opt.format == "text" && files[0].error.empty();
  bool printed_words = false;
  size_t printed_turns = 0;
  std::vector<char> started(files.size(), 0);
  double audio_done = 0;
  size_t batch_index = 0;
  for (size_t begin = 0; begin < schedule.size(); begin += opt.batch_size, ++batch_index) {
    const size_t end = std::min(schedule.size(), begin + static_cast<size_t>(opt.batch_size));
    const std::vector<std::span<const float>> audio = schedule.audio(begin, end);
    // With the VAD on, a silent piece gets no words without running, as the server does (asr::is_silent).
    std::vector<asr::Transcript> out(audio.size());
    std::vector<std::span<const float>> run;
    std::vector<size_t> ran;
    for (size_t k = 0; k < audio.size(); ++k) {
      out[k].audio_seconds = static_cast<double>(audio[k].size()) / rate;
      if (vad_mode != vad::VadMode::kOff && asr::is_silent(audio[k])) continue;
      run.push_back(audio[k]);
      ran.push_back(k);
    }
    asr::StageTimings timings;
    if (!run.empty()) {
      std::vector<asr::Transcript> got = transcriber.transcribe(run, &timings);
      for (size_t k = 0; k < ran.size(); ++k) out[ran[k]] = std::move(got[k]);
    }
    for (size_t k = begin; k < end; ++k) {
      FileResult& r = results[schedule.file_of(k)];
      if (!std::exchange(started[schedule.file_of(k)], char{1})) r.batch = batch_index;
      r.timings += timings;  // of every batch the file's pieces were in
      audio_done += static_cast<double>(audio[k - begin].size()) / rate;
    }
    for (const PieceSchedule::Stretch& stretch : schedule.finish(begin, std::move(out))) {
      if (!progressive) continue;
      if (!opt.diarize) {
        if (stretch.words.text.empty()) continue;
        std::printf("%s%s", printed_words ? " " : "", stretch.words.text.c_str());
        printed_words = true;
      } else {  // every turn but the last is finished: later words can only extend the last
        const std::vector<diar::SpeakerTurn> turns = turns_of(0, on_recording(0));
        if (turns.size() > printed_turns + 1) {
          std::fputs(diar::turns_to_text({turns.begin() + static_cast<std::ptrdiff_t>(printed_turns), turns.end() - 1})
                         .c_str(),
                     stdout);
          printed_turns = turns.size() - 1;
        }
      }
      std::fflush(stdout);
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    show_progress(end, schedule.size(), audio_done, wall, "pieces");
  }
  for (size_t f = 0; f < files.size(); ++f) {
    if (!files[f].error.empty()) continue;
    FileResult& r = results[f];
    r.transcript = on_recording(f);
    if (!diarizer) continue;
    r.turns = turns_of(f, r.transcript);
    r.speakers = diarized[f].active_speakers();
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();

  const int failures = report_file_problems(files);
  if (opt.format == "json") {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (size_t i = 0; i < files.size(); ++i) out.push_back(result_json(files[i], results[i], opt.diarize));
    nlohmann::ordered_json doc = {{"model", model->directory()},
                          {"files", out},
                          {"summary",
                           {{"audio_seconds", audio_done},
                            {"wall_seconds", wall_s},
                            {"rtfx", wall_s > 0 ? audio_done / wall_s : 0.0},
                            {"model_load_ms", load_ms},
                            {"threads", ctx.num_threads()},
                            {"device", device.str()},
                            {"gemm", gemm_name(compute)},
                            {"dtype", compute.fp8_linears ? "fp8" : dtype_name(dtype)},
                            {"batch_size", opt.batch_size},
                            {"failed", failures}}}};
    if (diarizer) doc["diarization"] = diarizer->settings_json();
    std::printf("%s\n", doc.dump(2).c_str());
  } else if (progressive && opt.diarize) {  // the turns not printed yet: the last, or all of a short file
    const auto& turns = results[0].turns;
    std::fputs(
        diar::turns_to_text({turns.begin() + static_cast<std::ptrdiff_t>(std::min(printed_turns, turns.size())),
                             turns.end()})
            .c_str(),
        stdout);
  } else if (progressive) {
    std::printf("\n");
  } else if (opt.diarize) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (!files[i].error.empty()) continue;
      if (files.size() > 1) std::printf("# %s\n", files[i].path.c_str());
      std::fputs(diar::turns_to_text(results[i].turns).c_str(), stdout);
    }
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
  cmd->add_option("-m,--model", opt->model,
                  "Model directory or .nemo checkpoint (default: $STENO_MODEL or the bundled model)");
  cmd->add_option("-f,--format", opt->format, "Output: text (one line per file) or json (words, segments, timings)");
  add_compute_options(cmd, opt->compute);
  add_decoding_options(cmd, opt->decoding);
  cmd->add_option("-b,--batch-size", opt->batch_size, "Files per batch (sorted by length first)");
  cmd->add_option("--local-attention", opt->local_attention,
                  "Use banded local attention of this half-width in encoder frames (NeMo rel_pos_local_attn; "
                  "e.g. 256 for long audio); 0 keeps the model's attention");
  cmd->add_option("--max-audio-seconds", opt->max_audio_seconds, "Refuse files longer than this");
  cmd->add_option("--piece-seconds", opt->piece_seconds,
                  "Transcribe audio longer than this as pieces of at most this long, cut in pauses, as steno serve "
                  "does (its words printed as they are made); 0: whole (full attention: quadratic in length)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_flag("--diarize", opt->diarize,
                "Tag every word with its speaker and print speaker turns (NeMo's SpeakerTaggedASR rule)");
  opt->diarizer.add_to(cmd);
  cmd->add_option("--vad", opt->vad,
                  "Voice activity detection: transcribe only the speech (Silero VAD; docs/vad.md): off, on, or auto "
                  "(recordings over 2 minutes)")
      ->check(CLI::IsMember({"off", "on", "auto"}));
  return [opt] { return run_transcribe(*opt); };
}

}  // namespace steno::cli
