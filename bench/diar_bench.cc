// Speed of the Sortformer diarizer end to end, from host audio to speaker probabilities on the host (peak
// normalisation, front end, encoder, projection, Transformer, sigmoids: SortformerModel::forward), at the shapes
// of the diarization benchmark (docs/benchmarks.md): 1 x 60 s, 32 x 60 s and 128 x 15 s.
//
// Audio: real speech, the reference conversations (tests/data/sortformer-tiny/conv*.wav) joined into one stream;
// clip i of a batch with n samples is stream[(i * 7 s + k) mod S] for k < n, as cuda_engine_bench cuts its clips.
// Counters: ms per batch (wall, from this program's clock), ms per clip, RTFx (audio seconds per wall second).
// Each benchmark runs once untimed first (cuBLASLt heuristics, memory pools).
// The clips live in pageable host memory (std::vector), as the server's decoded audio does, unless --pinned-audio
// (CUDA) puts them in page-locked memory: a caller that decodes into pinned buffers uploads 32 x 60 s (123 MB) at
// full DMA speed instead of through CUDA's pageable staging (about 12 ms on the H200). NeMo's own figures start
// from audio already on the GPU.
//
//   diar_bench (--model=DIR | --like=CONFIG) [--device=cpu|cuda] [--dtype=bf16|f16|f32] [--threads=N]
//              [--pinned-audio] [--benchmark_* flags]
// Defaults: the CPU in f32; on CUDA bf16. The model is any Sortformer directory, or random weights (bf16 on disk)
// written to a temporary directory with the shapes of CONFIG, e.g. configs/sortformer-4spk-v2.json.
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "steno/core/tensor.h"
#include "steno/core/dtype.h"
#include "steno/diar/sortformer_model.h"
#include "steno/diar/sortformer_tools.h"
#include "op_counters.h"
#include "steno/ops/profiler.h"

namespace steno {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Settings {
  std::string model_dir;
  Device device = Device::cpu();
  DType dtype = DType::kF32;
  int threads = 0;
  bool pinned_audio = false;
};

Settings& settings() {
  static Settings s;
  return s;
}

const std::vector<float>& speech() {
  static const std::vector<float> pcm = [] {
    std::vector<float> out;
    const fs::path dir = fs::path(STENO_SOURCE_DIR) / "tests/data/sortformer-tiny";
    for (const char* clip : {"conv0.wav", "conv1.wav", "conv2.wav"}) {
      const auto a = audio::load_audio_file((dir / clip).string());
      out.insert(out.end(), a.samples.begin(), a.samples.end());
    }
    return out;
  }();
  return pcm;
}

// A batch of clips in host memory, pageable or pinned (Settings::pinned_audio), and the spans forward() takes.
struct Clips {
  std::vector<Tensor> buffers;
  std::vector<std::span<const float>> spans;
};

Clips clips(int count, double seconds) {
  const std::vector<float>& s = speech();
  const int64_t n = static_cast<int64_t>(seconds * audio::kSampleRate), stride = 7 * audio::kSampleRate;
  Allocator* pinned = settings().pinned_audio ? &cuda::default_pinned_allocator() : nullptr;
  Clips out;
  for (int i = 0; i < count; ++i) {
    Tensor t = pinned ? Tensor::empty({n}, DType::kF32, Device::cpu(), pinned) : Tensor::empty({n}, DType::kF32);
    float* p = t.data<float>();
    for (int64_t k = 0; k < n; ++k) p[k] = s[static_cast<size_t>((i * stride + k) % static_cast<int64_t>(s.size()))];
    out.spans.emplace_back(p, static_cast<size_t>(n));
    out.buffers.push_back(std::move(t));
  }
  return out;
}

struct Loaded {
  std::shared_ptr<const diar::SortformerModel> model;
  std::unique_ptr<ops::Context> ctx;
};

Loaded& loaded() {
  static Loaded l = [] {
    const Settings& s = settings();
    Loaded x;
    x.model = diar::SortformerModel::load(s.model_dir, {s.device, s.dtype});
    x.ctx = std::make_unique<ops::Context>(s.device.is_cpu() ? ops::Context::cpu(s.threads)
                                                             : ops::Context::cuda(s.device.index));
    return x;
  }();
  return l;
}

void BM_Diarize(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const double seconds = static_cast<double>(state.range(1));
  Loaded& l = loaded();
  const Clips pcm = clips(batch, seconds);
  const std::vector<std::span<const float>>& spans = pcm.spans;
  l.model->forward(*l.ctx, spans);  // untimed warm-up
  double total_s = 0;
  int64_t iterations = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const diar::SortformerOutput out = l.model->forward(*l.ctx, spans);
    benchmark::DoNotOptimize(out.probs.data<float>());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    state.SetIterationTime(s);
    total_s += s;
    ++iterations;
  }
  const double ms = 1e3 * total_s / static_cast<double>(iterations);
  state.counters["ms"] = ms;
  state.counters["ms_per_clip"] = ms / batch;
  state.counters["rtfx"] = batch * seconds / (ms / 1e3);
  state.SetLabel(fmt::format("{} {} {}{}", settings().device.str(), dtype_name(settings().dtype),
                             fs::path(settings().model_dir).filename().string(),
                             settings().pinned_audio ? " pinned-audio" : ""));
}

// The same pass's time by op (steno/ops/profiler.h: CUDA events around every op; CUDA only): counters
// op_<name>_ms and op_<name>_calls per pass. Events add a little time per op: this is for the breakdown.
void BM_DiarizeOps(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  const double seconds = static_cast<double>(state.range(1));
  Loaded& l = loaded();
  if (l.ctx->device().is_cpu()) {
    state.SkipWithError("op timing needs a CUDA device");
    return;
  }
  const Clips pcm = clips(batch, seconds);
  const std::vector<std::span<const float>>& spans = pcm.spans;
  l.model->forward(*l.ctx, spans);  // untimed warm-up
  ops::OpProfiler profiler;
  l.ctx->set_profiler(&profiler);
  for (auto _ : state) benchmark::DoNotOptimize(l.model->forward(*l.ctx, spans).probs.data<float>());
  l.ctx->set_profiler(nullptr);
  set_op_counters(state, profiler);
}

BENCHMARK(BM_DiarizeOps)->ArgNames({"clips", "seconds"})->Args({32, 60})->Iterations(3)->Unit(benchmark::kMillisecond);

BENCHMARK(BM_Diarize)
    ->ArgNames({"clips", "seconds"})
    ->Args({1, 60})
    ->Args({32, 60})
    ->Args({128, 15})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace steno

int main(int argc, char** argv) {
  steno::Settings& s = steno::settings();
  bool dtype_given = false;
  std::string like;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) { return a.rfind(flag, 0) == 0 ? a.substr(std::strlen(flag)) : std::string(); };
    if (!value("--model=").empty()) s.model_dir = value("--model=");
    else if (!value("--like=").empty()) like = value("--like=");
    else if (!value("--device=").empty()) s.device = steno::parse_device(value("--device="));
    else if (!value("--dtype=").empty()) s.dtype = steno::parse_dtype(value("--dtype=")), dtype_given = true;
    else if (!value("--threads=").empty()) s.threads = std::stoi(value("--threads="));
    else if (a == "--pinned-audio") s.pinned_audio = true;
    else rest.push_back(argv[i]);
  }
  if (s.model_dir.empty() && !like.empty()) {
    const steno::diar::SortformerConfig config = steno::diar::load_sortformer_like(like);
    s.model_dir = (std::filesystem::temp_directory_path() / ("diar_bench_" + std::to_string(getpid()))).string();
    steno::diar::write_random_sortformer(config, s.model_dir, 0, steno::DType::kBF16);
    std::atexit([] { std::filesystem::remove_all(steno::settings().model_dir); });
  }
  if (s.model_dir.empty()) {
    std::fprintf(stderr, "diar_bench: --model=DIR or --like=CONFIG is required (a Sortformer model or config)\n");
    return 2;
  }
  if (!dtype_given && !s.device.is_cpu()) s.dtype = steno::DType::kBF16;
  if (s.pinned_audio && s.device.is_cpu()) {
    std::fprintf(stderr, "diar_bench: --pinned-audio is for --device=cuda\n");
    return 2;
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
