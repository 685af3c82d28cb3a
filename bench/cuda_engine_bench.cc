// GPU speed of the engine (the engine benchmark, docs/benchmarks.md), one model per run, in the compute dtype given
// (bf16 by default):
//   - gemm_peak: an 8192³ bf16 GEMM through ops::gemm, the yardstick of the encoder's share of peak (TFLOP/s);
//   - at 1, 8 and 32 clips of 45 s and 128 clips of 10 s: features (the front end as the Transcriber runs it:
//     on the GPU from host audio, ctx.synchronize() after; on the CPU with --device=cpu), encoder (device-resident features in, ctx.synchronize() after: GPU time; TFLOP/s from the analytic
//     count encoder_flops() and its fraction of gemm_peak), the encoder's time by op (encoder_ops: CUDA events
//     around every op, steno/ops/profiler.h), decoder in each TdtLoop mode (ms per batch, tokens
//     and decoding steps per encoder frame) and end to end through asr::Transcriber (RTFx, stage times);
//   - offline: the `mix` workload (docs/benchmarks.md: 1,000 log-normal lengths, median 5.8 s, clipped to
//     [1.3, 35] s, sorted) transcribed in batches of 64 and of 128, RTFx.
//
// Audio: real speech. The committed test clips (tests/data/testset/espeak/audio/*.flac, in name order) are
// decoded with steno::audio and joined into one stream of S samples; clip i of a batch (or of the sorted mix)
// with n samples is stream[(i * 7 s + k) mod S] for k < n. --export_workload=DIR writes that stream
// (speech.f32, raw little-endian f32) and the shapes and mix lengths (workload.json), so that
// tools/bench/torch_engine_bench.py runs the same audio, and calibration/*.wav, the clips the 0.6b model's joint
// is calibrated on (the first 8 clips of 45 s and 16 of 10 s).
//
// Every counter is computed from this program's own clock over the timed iterations (wall time, as
// real_time): tflops, frac_of_peak, rtfx; per-iteration values (ms, tokens) are plain averages. Each benchmark
// runs once untimed first (cuBLASLt heuristics, graph capture, memory pools).
//
//   cuda_engine_bench [--model=DIR] [--model_name=NAME] [--dtype=bf16|f16|f32|fp8] [--audio_dir=DIR]
//                     [--export_workload=DIR] [--export_only] [--device=cpu] [--benchmark_* flags]
// --device=cpu runs what can run on the CPU (f32), as a smoke test of the program itself.
// Defaults: $STENO_BENCH_MODEL or the bundled model, $STENO_BENCH_DTYPE or bf16. See bench/run_gpu_engine_bench.sh.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "audio_upload.h"
#include "cuda_features.h"
#include "cuda_tdt_decoder.h"
#include "mix_workload.h"
#include "steno/asr/length_batches.h"
#include "steno/asr/model.h"
#include "steno/asr/transcriber.h"
#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "steno/core/dtype.h"
#include "steno/ops/copy.h"
#include "steno/ops/gemm.h"
#include "op_counters.h"
#include "steno/ops/profiler.h"

namespace steno {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---- settings -------------------------------------------------------------------------------------------------

struct Settings {
  std::string model_dir, model_name, audio_dir, export_dir;
  DType dtype = DType::kBF16;
  bool fp8 = false;  // --dtype=fp8: bf16 with the encoder's linear layers in FP8
  bool export_only = false;
  bool cpu = false;  // --device=cpu: a smoke test of this program on a machine without a GPU (f32; the GPU-only
                     // benchmarks report an error)
};

Settings& settings() {
  static Settings s;
  return s;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// ---- the analytic FLOP count ----------------------------------------------------------------------------------

// FLOPs (2 per multiply-add) of one encoder forward pass over `batch` clips padded to `feature_frames` mel frames:
// the matrix products and convolutions the maths needs, counted for the padded shape (the work the GPU is given;
// for equal-length clips it is all useful). With d = d_model, C = subsampling channels, F = feat_in, d_ff =
// ff_expansion_factor·d, K = conv kernel, and per stride-2 stage s = 1..S (S = log2 subsampling factor)
// T_s = ceil(T_{s-1} / 2), F_s = ceil(F_{s-1} / 2) (T_0 = feature_frames, F_0 = F), T = T_S:
//   subsampling, per clip: conv.0 (1 -> C, 3x3): 9C MACs at each of T_1·F_1 outputs; every later stage a
//     depthwise 3x3 (9C) and a pointwise C -> C (C²) at each of T_s·F_s outputs; `out` Linear(C·F_S -> d)
//     per frame: C·F_S·d.
//   per Conformer layer and frame: feed-forward 1 and 2, 2 x (d·d_ff + d_ff·d); linear_q, _k, _v, _out 4d²;
//     pointwise_conv1 (d -> 2d) 2d²; depthwise conv K·d; pointwise_conv2 d².
//   per layer, once per batch: linear_pos over the 2T - 1 relative positions: (2T - 1)·d².
//   per layer and clip, attention over T frames: q·kᵀ T²·d, the positional term (q + v)·posᵀ T²·d (the T x T
//     entries rel_shift keeps; NeMo's matmul computes T·(2T - 1) of them and drops the rest), probabilities·v T²·d.
// LayerNorm, softmax, GLU, SiLU, residual adds and the folded BatchNorm are left out: a few FLOPs per element,
// under 1 % of the total at d = 1024.
double encoder_flops(const asr::EncoderConfig& e, int64_t batch, int64_t feature_frames) {
  const double d = e.d_model, c = e.subsampling_conv_channels, dff = static_cast<double>(e.d_ff());
  double t = static_cast<double>(feature_frames), f = e.feat_in, sub = 0;
  for (int s = 1; s <= e.num_subsampling_stages(); ++s) {
    t = std::ceil(t / 2), f = std::ceil(f / 2);
    sub += (s == 1 ? 9 * c : 9 * c + c * c) * t * f;
  }
  sub += c * f * d * t;
  const double per_frame = 2 * (d * dff + dff * d) + 4 * d * d + 2 * d * d + e.conv_kernel_size * d + d * d;
  const double per_clip = sub + e.n_layers * (per_frame * t + 3 * t * t * d);
  const double per_batch = e.n_layers * (2 * t - 1) * d * d;
  return 2 * (static_cast<double>(batch) * per_clip + per_batch);
}

// ---- audio ----------------------------------------------------------------------------------------------------

constexpr int kRate = audio::kSampleRate;
constexpr double kClipOffsetSeconds = bench_workload::kClipOffsetSeconds;  // bench/mix_workload.h

const std::vector<float>& speech_stream() {
  static const std::vector<float> stream = [] {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(settings().audio_dir))
      if (entry.path().extension() == ".flac") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    STENO_CHECK(!files.empty(), "no .flac files in {}", settings().audio_dir);
    std::vector<float> out;
    for (const auto& p : files) {
      const auto a = audio::load_audio_file(p.string());
      out.insert(out.end(), a.samples.begin(), a.samples.end());
    }
    return out;
  }();
  return stream;
}

std::vector<float> clip(int64_t index, int64_t samples) {
  const auto& s = speech_stream();
  const auto size = static_cast<int64_t>(s.size());
  const int64_t start = bench_workload::clip_start(index, size, kRate);
  std::vector<float> out(static_cast<size_t>(samples));
  for (int64_t k = 0; k < samples; ++k) out[k] = s[(start + k) % size];
  return out;
}

// The `mix` lengths in samples, sorted (bench/mix_workload.h draws them; serve_load --open-loop sends the same).
const std::vector<int64_t>& mix_lengths() {
  static const std::vector<int64_t> lengths = [] {
    std::vector<int64_t> out = bench_workload::mix_lengths_as_drawn(kRate);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return lengths;
}

struct BatchShape {
  int64_t batch;
  double seconds;
  std::string name() const { return fmt::format("b{}x{}s", batch, std::lround(seconds)); }
};
const std::vector<BatchShape> kShapes = {{1, 45}, {8, 45}, {32, 45}, {128, 10}};
const std::vector<int64_t> kMixBatches = {64, 128};

// A 16 kHz mono 16-bit PCM WAV file (the test clips are 16-bit FLAC, so their samples round-trip exactly).
void write_wav(const fs::path& path, const std::vector<float>& samples) {
  std::vector<int16_t> pcm(samples.size());
  for (size_t i = 0; i < samples.size(); ++i)
    pcm[i] = static_cast<int16_t>(std::clamp(std::lround(samples[i] * 32768.0f), -32768L, 32767L));
  const auto data_bytes = static_cast<uint32_t>(pcm.size() * 2);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };  // little-endian hosts only
  auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  out.write("RIFF", 4);
  u32(36 + data_bytes);
  out.write("WAVEfmt ", 8);
  u32(16);         // fmt chunk size
  u16(1);          // PCM
  u16(1);          // mono
  u32(kRate);      // sample rate
  u32(kRate * 2);  // bytes per second
  u16(2);          // bytes per frame
  u16(16);         // bits per sample
  out.write("data", 4);
  u32(data_bytes);
  out.write(reinterpret_cast<const char*>(pcm.data()), data_bytes);
  STENO_CHECK(static_cast<bool>(out), "cannot write {}", path.string());
}

// The benchmark's first 8 clips of 45 s and 16 of 10 s as WAV files: what the 0.6b model's joint is calibrated
// on (`steno model random --token-rate 0.4 --calibrate-on DIR/calibration/*.wav`), since a random model's
// token rate depends on the clip length (its encoder output varies less within a long clip).
void export_calibration(const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& [count, seconds] : {std::pair{8, 45}, std::pair{16, 10}})
    for (int i = 0; i < count; ++i)
      write_wav(dir / fmt::format("clip-{}s-{:02d}.wav", seconds, i), clip(i, int64_t{seconds} * kRate));
}

void export_workload(const fs::path& dir) {
  fs::create_directories(dir);
  export_calibration(dir / "calibration");
  const auto& s = speech_stream();
  {
    std::ofstream out(dir / "speech.f32", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(s.data()), static_cast<std::streamsize>(s.size() * sizeof(float)));
    STENO_CHECK(static_cast<bool>(out), "cannot write {}", (dir / "speech.f32").string());
  }
  std::string shapes, mix;
  for (const auto& sh : kShapes)
    shapes += fmt::format("{}{{\"name\": \"{}\", \"batch\": {}, \"seconds\": {}}}", shapes.empty() ? "" : ", ",
                          sh.name(), sh.batch, sh.seconds);
  for (int64_t n : mix_lengths()) mix += fmt::format("{}{}", mix.empty() ? "" : ", ", n);
  std::ofstream out(dir / "workload.json", std::ios::trunc);
  out << "{\n  \"sample_rate\": " << kRate << ",\n  \"stream\": \"speech.f32\",\n  \"stream_samples\": " << s.size()
      << ",\n  \"clip_rule\": \"clip i of n samples = stream[(i * clip_offset_samples + k) mod stream_samples], "
         "k < n; mix clips indexed in sorted order\",\n  \"clip_offset_samples\": "
      << static_cast<int64_t>(kClipOffsetSeconds * kRate) << ",\n  \"shapes\": [" << shapes
      << "],\n  \"mix_batches\": [" << kMixBatches[0] << ", " << kMixBatches[1]
      << "],\n  \"mix_lengths_samples\": [" << mix << "]\n}\n";
  STENO_CHECK(static_cast<bool>(out), "cannot write {}", (dir / "workload.json").string());
  std::fprintf(stderr, "cuda_engine_bench: wrote %s (speech %.1f s, %zu mix lengths)\n", dir.string().c_str(),
               static_cast<double>(s.size()) / kRate, mix_lengths().size());
}

// ---- the engine -----------------------------------------------------------------------------------------------

// One batch shape's inputs, made once: the clips, their features (host and device) and encoder output.
struct Prepared {
  std::vector<std::vector<float>> pcm;
  std::vector<std::span<const float>> clips;
  double audio_seconds = 0;
  asr::Features features;
  Tensor device_features;
  asr::EncoderOutput encoded;
  int64_t valid_frames = 0;  // encoder frames summed over the batch
};

// Everything the benchmarks share, released by main() before exit (device memory must go before the CUDA runtime
// shuts down).
struct Engine {
  std::shared_ptr<const asr::AsrModel> model;
  ops::Context ctx = settings().cpu ? ops::Context::cpu() : ops::Context::cuda(0);
  ops::Context host = ops::Context::cpu();  // the front end's, as the Transcriber makes its own
  std::unique_ptr<asr::Transcriber> transcriber;
  asr::CudaTdtDecoder::Workspace workspace;  // the decoder benchmarks' own (the Transcriber has another)
  std::map<std::string, std::unique_ptr<Prepared>> prepared;
  Tensor peak_a, peak_b, peak_c;           // gemm_peak's operands
  std::vector<std::vector<float>> mix_pcm;  // the mix clips, sorted by length
  struct Lane {                             // offline_mix's lanes past the first (lane_transcriber)
    ops::Context ctx = settings().cpu ? ops::Context::cpu() : ops::Context::cuda(0);
    std::unique_ptr<asr::Transcriber> transcriber;  // after ctx, which it keeps a reference to
  };
  std::vector<std::unique_ptr<Lane>> extra_lanes;
  double gemm_peak_tflops = 0;
};

std::unique_ptr<Engine>& engine_slot() {
  static std::unique_ptr<Engine> e;
  return e;
}

Engine& engine() {
  auto& e = engine_slot();
  if (!e) {
    e = std::make_unique<Engine>();
    asr::ModelOverrides o;
    o.device = settings().cpu ? Device::cpu() : Device::cuda(0);
    o.dtype = settings().cpu ? DType::kF32 : settings().dtype;
    o.fp8_linears = settings().fp8 && !settings().cpu;
    e->model = asr::AsrModel::load(settings().model_dir, o);
    e->transcriber = std::make_unique<asr::Transcriber>(e->model, e->ctx);
  }
  return *e;
}

// The batch's features where the Transcriber computes them: on the model's GPU, or on the CPU.
asr::Features compute_features(Engine& e, const std::vector<std::span<const float>>& clips) {
  if (const asr::CudaFeatureExtractor* gpu = e.model->cuda_features()) return gpu->compute(e.ctx, clips);
  return e.model->features().compute(e.host, clips);
}

Prepared& prepared(const BatchShape& shape) {
  Engine& e = engine();
  auto& slot = e.prepared[shape.name()];
  if (slot) return *slot;
  slot = std::make_unique<Prepared>();
  Prepared& p = *slot;
  for (int64_t i = 0; i < shape.batch; ++i) p.pcm.push_back(clip(i, std::llround(shape.seconds * kRate)));
  for (const auto& c : p.pcm) p.clips.emplace_back(c);
  p.audio_seconds = static_cast<double>(shape.batch) * shape.seconds;
  p.features = compute_features(e, p.clips);
  p.device_features = ops::to_context(e.ctx, p.features.values, e.model->dtype());
  p.encoded = e.model->encoder().forward(e.ctx, p.device_features, p.features.lengths);
  e.ctx.synchronize();
  for (int64_t len : p.encoded.lengths) p.valid_frames += len;
  return p;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A device tensor of uniform values in [-1, 1) in `dtype`.
Tensor random_device(ops::Context& ctx, const Shape& shape, DType dtype, uint64_t seed) {
  Tensor host = Tensor::empty(shape);
  float* p = host.data<float>();
  uint64_t x = seed;
  for (int64_t i = 0; i < host.numel(); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t{1} << 23)) * 0x1.0p-23f;
  }
  return ops::to_context(ctx, host, dtype);
}

// ---- benchmarks -----------------------------------------------------------------------------------------------

constexpr int64_t kPeakN = 8192;
constexpr int kPeakRepeats = 10;  // GEMMs per timed iteration (one synchronize each)

void gemm_peak(benchmark::State& state) {
  Engine& e = engine();
  Tensor &a = e.peak_a, &b = e.peak_b, &c = e.peak_c;
  if (!a.defined()) {
    a = random_device(e.ctx, {kPeakN, kPeakN}, DType::kBF16, 1);
    b = random_device(e.ctx, {kPeakN, kPeakN}, DType::kBF16, 2);
    c = e.ctx.scratch({kPeakN, kPeakN}, DType::kBF16);
    for (int i = 0; i < 3; ++i) ops::gemm(e.ctx, a, false, b, true, c);  // heuristic, clocks up
    e.ctx.synchronize();
  }
  const auto start = Clock::now();
  for (auto _ : state) {
    for (int r = 0; r < kPeakRepeats; ++r) ops::gemm(e.ctx, a, false, b, true, c);
    e.ctx.synchronize();
  }
  const double flops = 2.0 * kPeakN * kPeakN * kPeakN * kPeakRepeats * static_cast<double>(state.iterations());
  e.gemm_peak_tflops = flops / seconds_since(start) / 1e12;
  state.counters["tflops"] = e.gemm_peak_tflops;
  state.SetLabel("bf16 8192^3 x" + std::to_string(kPeakRepeats) + " per iteration");
}

// The peak measured by gemm_peak in this process (measured here if that benchmark was filtered out).
double peak_tflops() {
  Engine& e = engine();
  if (e.gemm_peak_tflops <= 0 && !settings().cpu) {
    Tensor a = random_device(e.ctx, {kPeakN, kPeakN}, DType::kBF16, 1);
    Tensor c = e.ctx.scratch({kPeakN, kPeakN}, DType::kBF16);
    ops::gemm(e.ctx, a, false, a, true, c);
    e.ctx.synchronize();
    const auto start = Clock::now();
    for (int r = 0; r < 5 * kPeakRepeats; ++r) ops::gemm(e.ctx, a, false, a, true, c);
    e.ctx.synchronize();
    e.gemm_peak_tflops = 2.0 * kPeakN * kPeakN * kPeakN * 5 * kPeakRepeats / seconds_since(start) / 1e12;
  }
  return e.gemm_peak_tflops;
}

// The compute dtype as --dtype names it: "fp8" for bf16 with FP8 linear layers.
std::string dtype_label(const asr::AsrModel& m) {
  return m.encoder().fp8_linears() ? "fp8" : dtype_name(m.dtype());
}

std::string label(const BatchShape& s) {
  return settings().model_name + " " + dtype_label(*engine().model) + " " + s.name();
}

void features(benchmark::State& state, BatchShape shape) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  for (auto _ : state) {
    benchmark::DoNotOptimize(compute_features(e, p.clips));
    e.ctx.synchronize();
  }
  state.SetLabel(label(shape) + (e.model->cuda_features()
                                     ? std::string(" (GPU)")
                                     : " (CPU, " + std::to_string(e.host.num_threads()) + " threads)"));
}

// The front end right after other work on the same context, timed alone (counter features_ms): after the
// encoder, and after a whole transcription of the batch (as in end_to_end, whose features stage measured ~5 ms
// more than `features/` at 32 x 45 s on the H200): what that work leaves behind -- the pool's blocks, queued
// work, the GPU's state -- and costs the next batch's front end.
void features_after(benchmark::State& state, BatchShape shape, bool whole_transcription) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  double front_end_s = 0;
  for (auto _ : state) {
    if (whole_transcription) {
      benchmark::DoNotOptimize(e.transcriber->transcribe(p.clips));
    } else {
      asr::EncoderOutput out = e.model->encoder().forward(e.ctx, p.device_features, p.features.lengths);
      e.ctx.synchronize();
    }
    const auto start = Clock::now();
    benchmark::DoNotOptimize(compute_features(e, p.clips));
    e.ctx.synchronize();
    front_end_s += seconds_since(start);
  }
  state.counters["features_ms"] = front_end_s * 1e3 / static_cast<double>(state.iterations());
  state.SetLabel(label(shape));
}

// The front end's audio transfer alone, both ways: straight from the clips' pageable memory (CUDA stages it
// itself, one clip after another) and packed into pinned memory by several threads (asr::upload_clips, what the
// front end does).
void upload(benchmark::State& state, BatchShape shape, bool staged) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  int64_t total = 0;
  for (const auto& c : p.clips) total += static_cast<int64_t>(c.size());
  Tensor dst = e.ctx.scratch({total});
  for (auto _ : state) {
    if (staged) {
      asr::upload_clips(e.ctx, p.clips, dst.data<float>());
    } else {
      float* at = dst.data<float>();
      for (const auto& c : p.clips) {
        steno::cuda::memcpy_async(at, c.data(), c.size_bytes(), e.ctx.stream());
        at += c.size();
      }
      e.ctx.synchronize();
    }
  }
  state.counters["gb_per_s"] = benchmark::Counter(static_cast<double>(total) * 4 * 1e-9 * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.SetLabel(label(shape));
}

void encoder(benchmark::State& state, BatchShape shape) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  const double flops = encoder_flops(e.model->config().encoder, shape.batch, p.device_features.dim(1));
  const double peak = peak_tflops();
  const auto start = Clock::now();
  for (auto _ : state) {
    asr::EncoderOutput out = e.model->encoder().forward(e.ctx, p.device_features, p.features.lengths);
    e.ctx.synchronize();
    benchmark::DoNotOptimize(out.encoded.raw());
  }
  const double tflops = flops * static_cast<double>(state.iterations()) / seconds_since(start) / 1e12;
  state.counters["tflops"] = tflops;
  state.counters["frac_of_peak"] = peak > 0 ? tflops / peak : 0.0;
  state.counters["peak_tflops"] = peak;
  state.counters["gflop"] = flops / 1e9;
  state.counters["frames"] = static_cast<double>(p.device_features.dim(1));
  state.SetLabel(label(shape));
}

// The encoder's GPU time by op (steno/ops/profiler.h: CUDA events around every op) over the timed iterations:
// counters op_<name>_ms (per pass) and op_<name>_calls. Events add a little time per op, so the pass time here
// is a bit above encoder/'s; the breakdown is what this is for.
void encoder_ops(benchmark::State& state, BatchShape shape) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  ops::OpProfiler profiler;
  e.ctx.set_profiler(&profiler);
  try {
    for (auto _ : state) {
      asr::EncoderOutput out = e.model->encoder().forward(e.ctx, p.device_features, p.features.lengths);
      e.ctx.synchronize();
      benchmark::DoNotOptimize(out.encoded.raw());
    }
  } catch (...) {
    e.ctx.set_profiler(nullptr);
    throw;
  }
  e.ctx.set_profiler(nullptr);
  set_op_counters(state, profiler);
  state.SetLabel(label(shape));
}

// `dedicated_max_rows`: CudaDecodeOptions::persistent_dedicated_max_rows (-1: its default).
void decoder(benchmark::State& state, BatchShape shape, asr::TdtLoop loop, int64_t dedicated_max_rows) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  const asr::CudaTdtDecoder* gpu = e.model->cuda_decoder();
  STENO_CHECK(gpu != nullptr, "the model has no CUDA decoder");
  asr::CudaDecodeOptions options;
  options.loop = loop;
  options.persistent_min_rows = 1;  // the kernel itself at every shape (end_to_end runs the default policy)
  options.persistent_max_rows = 256;
  if (dedicated_max_rows >= 0) options.persistent_dedicated_max_rows = dedicated_max_rows;
  asr::DecodeStats warm;
  std::vector<asr::Hypothesis> hyps =
      gpu->decode(e.ctx, e.workspace, p.encoded.encoded, p.encoded.lengths, options, &warm);
  asr::DecodeStats stats;
  for (auto _ : state)
    hyps = gpu->decode(e.ctx, e.workspace, p.encoded.encoded, p.encoded.lengths, options, &stats);
  int64_t tokens = 0;
  for (const auto& h : hyps) tokens += static_cast<int64_t>(h.tokens.size());
  const double frames = static_cast<double>(p.valid_frames);
  state.counters["tokens_per_frame"] = static_cast<double>(tokens) / frames;
  state.counters["steps_per_frame"] = static_cast<double>(warm.steps) / frames;
  state.counters["tokens"] = static_cast<double>(tokens);
  if (loop == asr::TdtLoop::kGraphWhile) state.counters["while_node"] = e.workspace.while_supported() ? 1 : 0;
  if (loop == asr::TdtLoop::kPersistent) {
    state.counters["persistent_blocks"] = e.workspace.persistent_blocks();
    state.counters["persistent_dedicated"] = e.workspace.persistent_dedicated();
  }
  state.SetLabel(label(shape) + " " + asr::tdt_loop_name(loop));
}

void set_stage_counters(benchmark::State& state, const asr::StageTimings& sum, double runs, double audio_seconds,
                        double wall_seconds) {
  state.counters["rtfx"] = audio_seconds / wall_seconds;
  state.counters["features_ms"] = sum.features_ms / runs;
  state.counters["encoder_ms"] = sum.encoder_ms / runs;
  state.counters["decoder_ms"] = sum.decoder_ms / runs;
  state.counters["detokenize_ms"] = sum.detokenize_ms / runs;
}

void end_to_end(benchmark::State& state, BatchShape shape) {
  Engine& e = engine();
  Prepared& p = prepared(shape);
  benchmark::DoNotOptimize(e.transcriber->transcribe(p.clips));  // warm-up: graphs, plans, pools
  asr::StageTimings sum;
  const auto start = Clock::now();
  for (auto _ : state) {
    asr::StageTimings t;
    benchmark::DoNotOptimize(e.transcriber->transcribe(p.clips, &t));
    sum += t;
  }
  const double runs = static_cast<double>(state.iterations());
  set_stage_counters(state, sum, runs, p.audio_seconds * runs, seconds_since(start));
  state.counters["decoder_steps_per_frame"] = static_cast<double>(sum.decoder_steps) / runs / p.valid_frames;
  state.SetLabel(label(shape));
}

// How a mix pass cuts the sorted clips into batches: a fixed count (the protocol's batch sizes), or the planner's
// cheapest cut under its cost model (asr/length_batches.h; kPlanned).
constexpr int64_t kPlanned = 0;
std::vector<asr::BatchRange> mix_batches(int64_t batch_size) {
  const auto& lengths = mix_lengths();
  if (batch_size == kPlanned) return asr::plan_length_batches(lengths, kRate);
  std::vector<asr::BatchRange> out;
  for (size_t i = 0; i < lengths.size(); i += static_cast<size_t>(batch_size))
    out.push_back({i, std::min(lengths.size(), i + static_cast<size_t>(batch_size))});
  return out;
}

// Transcribers beyond the engine's own, each on a context (a CUDA stream) of its own over the same weights: with
// two, one lane's decoder (latency-bound, a few SMs) runs beside the other's encoder.
asr::Transcriber& lane_transcriber(Engine& e, int lane) {
  if (lane == 0) return *e.transcriber;
  while (static_cast<int>(e.extra_lanes.size()) < lane) {
    auto l = std::make_unique<Engine::Lane>();
    l->transcriber = std::make_unique<asr::Transcriber>(e.model, l->ctx);
    e.extra_lanes.push_back(std::move(l));
  }
  return *e.extra_lanes[static_cast<size_t>(lane - 1)]->transcriber;
}

// The offline `mix`: 1,000 clips sorted by length, cut into batches (mix_batches), transcribed by `lanes`
// threads that take the batches in order. Stage timings are summed over the lanes' batches, so with two lanes
// they add up to more than the wall time.
void offline_mix(benchmark::State& state, int64_t batch_size, int lanes) {
  Engine& e = engine();
  const auto& lengths = mix_lengths();
  std::vector<std::vector<float>>& pcm = e.mix_pcm;
  if (pcm.empty())
    for (size_t i = 0; i < lengths.size(); ++i) pcm.push_back(clip(static_cast<int64_t>(i), lengths[i]));
  double audio = 0;
  for (int64_t n : lengths) audio += static_cast<double>(n) / kRate;
  const std::vector<asr::BatchRange> batches = mix_batches(batch_size);
  std::vector<asr::Transcriber*> transcribers;
  for (int l = 0; l < lanes; ++l) transcribers.push_back(&lane_transcriber(e, l));
  auto run_batch = [&](asr::Transcriber& t, const asr::BatchRange& r, asr::StageTimings* timings) {
    std::vector<std::span<const float>> batch;
    for (size_t i = r.begin; i < r.end; ++i) batch.emplace_back(pcm[i]);
    benchmark::DoNotOptimize(t.transcribe(batch, timings));
  };
  auto pass = [&](asr::StageTimings* sum) {
    std::atomic<size_t> next{0};
    std::mutex mu;
    auto lane = [&](asr::Transcriber* t) {
      for (size_t b; (b = next.fetch_add(1)) < batches.size();) {
        asr::StageTimings timings;
        run_batch(*t, batches[b], &timings);
        std::lock_guard lock(mu);
        if (sum) *sum += timings;
      }
    };
    std::vector<std::thread> threads;
    for (size_t l = 1; l < transcribers.size(); ++l) threads.emplace_back(lane, transcribers[l]);
    lane(transcribers[0]);
    for (auto& t : threads) t.join();
  };
  // Warm-up: every batch shape once on every lane (graphs, plans, pools are per transcriber).
  for (asr::Transcriber* t : transcribers)
    for (const asr::BatchRange& r : batches) run_batch(*t, r, nullptr);
  asr::StageTimings sum;
  const auto start = Clock::now();
  for (auto _ : state) pass(&sum);
  const double runs = static_cast<double>(state.iterations());
  set_stage_counters(state, sum, runs, audio * runs, seconds_since(start));
  state.counters["audio_seconds"] = audio;
  state.counters["clips"] = static_cast<double>(lengths.size());
  state.counters["batches"] = static_cast<double>(batches.size());
  state.counters["lanes"] = lanes;
  state.counters["padding_waste"] = asr::padding_waste(lengths, batches);
  state.counters["modelled_ms"] = asr::batches_cost_ms(lengths, kRate, batches, asr::BatchCostModel{});
  const std::string cut = batch_size == kPlanned ? std::string("planned batches") : "batch " + std::to_string(batch_size);
  state.SetLabel(settings().model_name + " " + dtype_label(*e.model) + " mix, " + cut +
                 (lanes > 1 ? ", " + std::to_string(lanes) + " lanes" : ""));
}

// Registers `fn(state, args...)` under `name`; an exception becomes that benchmark's error (the run goes on and
// the JSON stays whole).
template <typename Fn, typename... Args>
benchmark::internal::Benchmark* add(const std::string& name, Fn fn, Args... args) {
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [=](benchmark::State& state) {
                                        try {
                                          fn(state, args...);
                                        } catch (const std::exception& e) {
                                          state.SkipWithError(e.what());
                                        }
                                      })
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

void register_benchmarks() {
  add("gemm_peak", gemm_peak);
  for (const BatchShape& s : kShapes) {
    add("upload/pageable/" + s.name(), upload, s, false);
    add("upload/staged/" + s.name(), upload, s, true);
    add("features/" + s.name(), features, s);
    add("features_after/encoder/" + s.name(), features_after, s, false);
    add("features_after/transcription/" + s.name(), features_after, s, true);
    add("encoder/" + s.name(), encoder, s);
    add("encoder_ops/" + s.name(), encoder_ops, s)->Iterations(3)->Repetitions(1);
    for (asr::TdtLoop loop : {asr::TdtLoop::kPersistent, asr::TdtLoop::kGraphWhile, asr::TdtLoop::kGraphUnrolled,
                              asr::TdtLoop::kEager})
      add(fmt::format("decoder/{}/{}", asr::tdt_loop_name(loop), s.name()), decoder, s, loop, -1);
    // The persistent kernel's block roles forced either way (the line above: the default by bucket size).
    add("decoder/persistent-shared/" + s.name(), decoder, s, asr::TdtLoop::kPersistent, 0);
    add("decoder/persistent-dedicated/" + s.name(), decoder, s, asr::TdtLoop::kPersistent, 256);
    add("end_to_end/" + s.name(), end_to_end, s);
  }
  // A pass over the mix takes about a second for the 0.6B model: a fixed count, not min_time, bounds the run.
  for (int64_t b : kMixBatches)
    add("offline_mix/b" + std::to_string(b), offline_mix, b, 1)->Iterations(3)->Repetitions(1);
  add("offline_mix/b128/lanes:2", offline_mix, int64_t{128}, 2)->Iterations(3)->Repetitions(1);
  add("offline_mix/planned", offline_mix, kPlanned, 1)->Iterations(3)->Repetitions(1);
  for (int lanes : {2, 3, 4})
    add(fmt::format("offline_mix/planned/lanes:{}", lanes), offline_mix, kPlanned, lanes)->Iterations(3)->Repetitions(1);
}

// Parses and removes this program's own flags from what Google Benchmark left.
void parse_flags(int& argc, char** argv) {
  Settings& s = settings();
  s.model_dir = env_or("STENO_BENCH_MODEL", (fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en").string());
  s.audio_dir = env_or("STENO_BENCH_AUDIO", (fs::path(STENO_SOURCE_DIR) / "tests/data/testset/espeak/audio").string());
  std::string dtype = env_or("STENO_BENCH_DTYPE", "bf16"), device = "cuda";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag, std::string& dst) {
      if (a.rfind(flag + "=", 0) != 0) return false;
      dst = a.substr(flag.size() + 1);
      return true;
    };
    if (value("--model", s.model_dir) || value("--model_name", s.model_name) || value("--dtype", dtype) ||
        value("--audio_dir", s.audio_dir) || value("--export_workload", s.export_dir) || value("--device", device))
      continue;
    if (a == "--export_only") {
      s.export_only = true;
      continue;
    }
    argv[out++] = argv[i];
  }
  argc = out;
  s.fp8 = dtype == "fp8";
  s.dtype = s.fp8 ? DType::kBF16 : parse_dtype(dtype);
  s.cpu = device == "cpu";
  if (s.model_name.empty()) s.model_name = fs::path(s.model_dir).filename().string();
}

}  // namespace
}  // namespace steno

int main(int argc, char** argv) {
  using namespace steno;
  bool list_only = false;  // --benchmark_list_tests: names only, no device needed
  for (int i = 1; i < argc; ++i)
    list_only |= std::string(argv[i]).rfind("--benchmark_list_tests", 0) == 0 &&
                 std::string(argv[i]).find("=false") == std::string::npos;
  benchmark::Initialize(&argc, argv);
  parse_flags(argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    if (!settings().export_dir.empty()) export_workload(settings().export_dir);
    if (settings().export_only) return 0;
    register_benchmarks();
    if (!list_only && !settings().cpu) {
      if (cuda::device_count() == 0) {
        std::fprintf(stderr, "cuda_engine_bench: no CUDA device\n");
        return 1;
      }
      const cuda::DeviceInfo info = cuda::device_info(0);
      benchmark::AddCustomContext("gpu", info.name);
      benchmark::AddCustomContext("gpu_sm", std::to_string(info.sm_major) + "." + std::to_string(info.sm_minor));
      benchmark::AddCustomContext("gpu_multiprocessors", std::to_string(info.multiprocessors));
    }
    if (!list_only) {
      const Engine& e = engine();  // load the model before the first benchmark
      benchmark::AddCustomContext("model", settings().model_name);
      benchmark::AddCustomContext("model_dir", settings().model_dir);
      benchmark::AddCustomContext("device", e.model->device().str());
      benchmark::AddCustomContext("dtype", dtype_label(*e.model));
      benchmark::AddCustomContext("speech_seconds",
                                  std::to_string(static_cast<double>(speech_stream().size()) / kRate));
    }
    benchmark::RunSpecifiedBenchmarks();
    engine_slot().reset();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_engine_bench: %s\n", e.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
