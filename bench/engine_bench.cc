// End-to-end CPU speed of the engine on 10 s of speech: features, encoder, TDT decoding and the whole
// transcription, as RTFx (audio seconds per wall second), for
//   - the bundled model (models/steno-tdt-small-en, 8.9 M parameters),
//   - the golden config: nemo-tiny (tests/data/nemo-tiny converted by the test fixture, or $STENO_BENCH_TINY), and
//   - the Parakeet-TDT-0.6B shapes: random weights written once by `write_random_model` from
//     configs/parakeet-tdt-0.6b-v2.json into the build tree (or $STENO_BENCH_06B), bf16 on disk, fp32 in memory.
// Each benchmark takes {gemm backend (0 = onednn, 1 = openblas), threads}.
//
//   build/bench/engine_bench --benchmark_out=bench/results/cpu-engine.json --benchmark_out_format=json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>

#include "steno/asr/random_model.h"
#include "steno/asr/tdt_beam.h"
#include "steno/asr/transcriber.h"
#include "steno/asr/weight_store.h"
#include "steno/audio/decode.h"

namespace steno {
namespace {

namespace fs = std::filesystem;
constexpr double kAudioSeconds = 10.0;

// 10 s of real speech: the nemo-tiny clips end to end, repeated as needed.
const std::vector<float>& speech_10s() {
  static const std::vector<float> pcm = [] {
    std::vector<float> out;
    const fs::path dir = fs::path(STENO_SOURCE_DIR) / "tests/data/nemo-tiny";
    const size_t want = static_cast<size_t>(kAudioSeconds * audio::kSampleRate);
    while (out.size() < want)
      for (const char* clip : {"clip2_9.0s.wav", "clip1_4.3s.wav"}) {
        const auto a = audio::load_audio_file((dir / clip).string());
        out.insert(out.end(), a.samples.begin(), a.samples.end());
      }
    out.resize(want);
    return out;
  }();
  return pcm;
}

std::string env_or(const char* name, const fs::path& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback.string();
}

// The engine's parts, built once per model (the 0.6B one takes a few seconds to load).
struct Engine {
  asr::ModelConfig config;
  std::unique_ptr<asr::FeatureExtractor> features;
  std::unique_ptr<asr::ConformerEncoder> encoder;
  std::unique_ptr<asr::TdtDecoder> decoder;
};

const Engine& engine(const std::string& which) {
  static std::map<std::string, std::unique_ptr<Engine>> cache;
  auto& slot = cache[which];
  if (slot) return *slot;
  fs::path dir;
  if (which == "tiny") {
    dir = env_or("STENO_BENCH_TINY", fs::path(STENO_BINARY_DIR) / "testdata/nemo-tiny-25");
  } else if (which == "bundled") {
    dir = fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en";
  } else {
    dir = env_or("STENO_BENCH_06B", fs::path(STENO_BINARY_DIR) / "bench-models/parakeet-0.6b-random");
    if (!fs::exists(dir / "model.safetensors")) {
      const auto like = asr::load_model_like(fs::path(STENO_SOURCE_DIR) / "configs/parakeet-tdt-0.6b-v2.json");
      asr::write_random_model(like.config, dir, /*seed=*/1, DType::kBF16);
    }
  }
  slot = std::make_unique<Engine>();
  slot->config = asr::ModelConfig::load(dir);
  const auto weights = asr::WeightStore::open(dir / "model.safetensors", slot->config);
  auto opt = [&](const char* n) { return weights.has(n) ? weights.get(n) : Tensor(); };
  slot->features = std::make_unique<asr::FeatureExtractor>(slot->config.preprocessor,
                                                           opt("preprocessor.featurizer.fb"),
                                                           opt("preprocessor.featurizer.window"));
  const auto& e = slot->config.encoder;
  slot->encoder = std::make_unique<asr::ConformerEncoder>(
      e, slot->config.preprocessor.frontend_version == asr::FrontendVersion::kNeMo25,
      ops::AttentionWindow{e.att_context_size[0], e.att_context_size[1]}, weights);
  slot->decoder = std::make_unique<asr::TdtDecoder>(slot->config, weights);
  return *slot;
}

ops::Context make_context(benchmark::State& state, const char* model) {
  const auto backend = state.range(0) == 0 ? ops::GemmBackend::kOneDnn : ops::GemmBackend::kOpenBlas;
  const int threads = static_cast<int>(state.range(1));
  state.SetLabel(std::string(model) + " " + ops::gemm_backend_name(backend) + " x" + std::to_string(threads));
  return ops::Context::cpu(threads, backend);
}

void set_rtfx(benchmark::State& state) {
  state.counters["RTFx"] = benchmark::Counter(kAudioSeconds, benchmark::Counter::kIsIterationInvariantRate);
}

enum class Stage { kFeatures, kEncoder, kDecoder, kEndToEnd, kBeamDecoder, kBeamLmDecoder, kEndToEndBeamLm };

// The bundled model's beam settings: `beam` hypotheses alone, or with its token LM at the default weights
// (tdt_beam.h); beam 0: its default decoding (config.json: beam search with its LM), what a user gets.
asr::BeamOptions beam_options(bool with_lm, int beam) {
  const fs::path dir = fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en";
  if (beam == 0) return *asr::DecodingRequest{}.resolve(engine("bundled").config, dir);
  asr::DecodingRequest request;
  request.decoding = "beam";
  request.beam_size = beam;
  if (with_lm) request.lm = (dir / "lm.arpa.gz").string();
  return *request.resolve(engine("bundled").config.decoder.vocab_size);
}

void run(benchmark::State& state, const char* model, Stage stage, int beam_size = 8) {
  const Engine& e = engine(model);
  ops::Context ctx = make_context(state, model);
  const std::vector<std::span<const float>> clip = {speech_10s()};
  const asr::Features feats = e.features->compute(ctx, clip);
  const asr::EncoderOutput enc = e.encoder->forward(ctx, feats.values, feats.lengths);
  asr::DecodeStats stats;
  const bool beam = stage == Stage::kBeamDecoder || stage == Stage::kBeamLmDecoder || stage == Stage::kEndToEndBeamLm;
  const asr::BeamOptions beam_opts = beam ? beam_options(stage != Stage::kBeamDecoder, beam_size) : asr::BeamOptions{};
  const asr::TdtDecoder::Parameters params = e.decoder->parameters(ctx);
  for (auto _ : state) {
    switch (stage) {
      case Stage::kFeatures: benchmark::DoNotOptimize(e.features->compute(ctx, clip)); break;
      case Stage::kEncoder: benchmark::DoNotOptimize(e.encoder->forward(ctx, feats.values, feats.lengths)); break;
      case Stage::kDecoder: benchmark::DoNotOptimize(e.decoder->decode(ctx, enc.encoded, enc.lengths, false, &stats)); break;
      case Stage::kEndToEnd: {
        const asr::Features f = e.features->compute(ctx, clip);
        const asr::EncoderOutput o = e.encoder->forward(ctx, f.values, f.lengths);
        benchmark::DoNotOptimize(e.decoder->decode(ctx, o.encoded, o.lengths, false, &stats));
        break;
      }
      case Stage::kBeamDecoder:
      case Stage::kBeamLmDecoder:
        benchmark::DoNotOptimize(asr::beam_decode(ctx, params, enc.encoded, enc.lengths, beam_opts, &stats));
        break;
      case Stage::kEndToEndBeamLm: {
        const asr::Features f = e.features->compute(ctx, clip);
        const asr::EncoderOutput o = e.encoder->forward(ctx, f.values, f.lengths);
        benchmark::DoNotOptimize(asr::beam_decode(ctx, params, o.encoded, o.lengths, beam_opts, &stats));
        break;
      }
    }
  }
  set_rtfx(state);
  if (stage != Stage::kFeatures && stage != Stage::kEncoder) {
    const double per_iteration = 1.0 / static_cast<double>(state.iterations());
    state.counters["decoder_steps"] = static_cast<double>(stats.steps) * per_iteration;
    state.counters["lstm_updates"] = static_cast<double>(stats.lstm_updates) * per_iteration;
  }
}

// A clip of a length the process has not seen before at every iteration (2.00 s, 2.01 s, ...): what a server pays
// when every request has its own length, unlike the 10 s clip above that reuses one shape. (Measured 2026-12-01:
// nothing extra in a warm process, ~0.4 ms of features per second of audio with either library; the 30-60 ms of
// features a one-shot `steno transcribe` shows is the first GEMM call of the process -- library and thread start-up,
// ~32 ms on oneDNN, ~7 ms on OpenBLAS, whose first encoder call then pays ~40 ms -- not the shapes.)
void run_varying_length(benchmark::State& state, const char* model, Stage stage) {
  const Engine& e = engine(model);
  ops::Context ctx = make_context(state, model);
  const std::vector<float>& speech = speech_10s();
  static int64_t next_ms = 2000;  // across benchmarks too: never a length seen before
  double audio_s = 0;
  asr::DecodeStats stats;
  for (auto _ : state) {
    next_ms = next_ms >= 9000 ? 2000 : next_ms + 10;
    const size_t n = static_cast<size_t>(next_ms) * audio::kSampleRate / 1000;
    const std::vector<std::span<const float>> clip = {std::span<const float>(speech.data(), n)};
    audio_s += static_cast<double>(n) / audio::kSampleRate;
    const asr::Features f = e.features->compute(ctx, clip);
    if (stage == Stage::kFeatures) continue;
    const asr::EncoderOutput o = e.encoder->forward(ctx, f.values, f.lengths);
    benchmark::DoNotOptimize(e.decoder->decode(ctx, o.encoded, o.lengths, false, &stats));
  }
  state.counters["RTFx"] = benchmark::Counter(audio_s, benchmark::Counter::kIsRate);
  state.counters["audio_ms_per_call"] = 1e3 * audio_s / static_cast<double>(std::max<int64_t>(state.iterations(), 1));
}
void BM_Bundled_FeaturesNewLengths(benchmark::State& s) { run_varying_length(s, "bundled", Stage::kFeatures); }
void BM_Bundled_EndToEndNewLengths(benchmark::State& s) { run_varying_length(s, "bundled", Stage::kEndToEnd); }

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"gemm", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int backend : {0, 1})
    for (int threads : {1, 2}) b->Args({backend, threads});
}

void BM_Tiny_Features(benchmark::State& s) { run(s, "tiny", Stage::kFeatures); }
void BM_Tiny_Encoder(benchmark::State& s) { run(s, "tiny", Stage::kEncoder); }
void BM_Tiny_Decoder(benchmark::State& s) { run(s, "tiny", Stage::kDecoder); }
void BM_Tiny_EndToEnd(benchmark::State& s) { run(s, "tiny", Stage::kEndToEnd); }
void BM_Bundled_EndToEnd(benchmark::State& s) { run(s, "bundled", Stage::kEndToEnd); }
void BM_Bundled_Decoder(benchmark::State& s) { run(s, "bundled", Stage::kDecoder); }
void BM_Bundled_BeamDecoder(benchmark::State& s) { run(s, "bundled", Stage::kBeamDecoder); }
void BM_Bundled_BeamLmDecoder(benchmark::State& s) { run(s, "bundled", Stage::kBeamLmDecoder); }
void BM_Bundled_EndToEndBeamLm(benchmark::State& s) { run(s, "bundled", Stage::kEndToEndBeamLm); }
// As `steno transcribe` decodes by default: the RTFx 250 on 2 threads is this one's.
void BM_Bundled_EndToEndModelDefault(benchmark::State& s) { run(s, "bundled", Stage::kEndToEndBeamLm, 0); }
// What the beam size costs end to end (oneDNN, 2 threads): which sizes keep LM decoding above the RTFx 250.
void BM_Bundled_EndToEndBeamLmSizes(benchmark::State& s) {
  run(s, "bundled", Stage::kEndToEndBeamLm, static_cast<int>(s.range(2)));
}
void beam_size_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"gemm", "threads", "beam"})->UseRealTime()->Unit(benchmark::kMillisecond);
  for (int beam : {2, 4, 6, 8}) b->Args({0, 2, beam});
}
void BM_P06B_Features(benchmark::State& s) { run(s, "0.6b", Stage::kFeatures); }
void BM_P06B_Encoder(benchmark::State& s) { run(s, "0.6b", Stage::kEncoder); }
void BM_P06B_Decoder(benchmark::State& s) { run(s, "0.6b", Stage::kDecoder); }
void BM_P06B_EndToEnd(benchmark::State& s) { run(s, "0.6b", Stage::kEndToEnd); }

BENCHMARK(BM_Tiny_Features)->Apply(args);
BENCHMARK(BM_Tiny_Encoder)->Apply(args);
BENCHMARK(BM_Tiny_Decoder)->Apply(args);
BENCHMARK(BM_Tiny_EndToEnd)->Apply(args);
BENCHMARK(BM_Bundled_EndToEnd)->Apply(args);
BENCHMARK(BM_Bundled_Decoder)->Apply(args);
BENCHMARK(BM_Bundled_BeamDecoder)->Apply(args);
BENCHMARK(BM_Bundled_BeamLmDecoder)->Apply(args);
BENCHMARK(BM_Bundled_EndToEndBeamLm)->Apply(args);
BENCHMARK(BM_Bundled_EndToEndModelDefault)->Apply(args);
BENCHMARK(BM_Bundled_EndToEndBeamLmSizes)->Apply(beam_size_args);
BENCHMARK(BM_Bundled_FeaturesNewLengths)->Apply(args);
BENCHMARK(BM_Bundled_EndToEndNewLengths)->Apply(args);
BENCHMARK(BM_P06B_Features)->Apply(args);
BENCHMARK(BM_P06B_Encoder)->Apply(args);
BENCHMARK(BM_P06B_Decoder)->Apply(args);
BENCHMARK(BM_P06B_EndToEnd)->Apply(args);

}  // namespace
}  // namespace steno
BENCHMARK_MAIN();
