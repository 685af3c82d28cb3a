// Per-op CPU timings at the Parakeet-TDT-0.6B shapes for 10 s of audio: 1000 mel frames x 128 -> T = 125
// encoder frames, d = 1024, 8 heads of 128, feed-forward 4096, conv kernel 9, subsampling channels 256,
// prediction LSTM 640. Every benchmark takes {gemm backend (0 = onednn, 1 = openblas), threads}. Times and rates
// are wall-clock (UseRealTime): CPU time would count only the calling thread. On a shared machine, run with
// OMP_WAIT_POLICY=PASSIVE: oneDNN's OpenMP threads otherwise spin at barriers while descheduled.
//
//   build-ops/bench/ops_bench --benchmark_filter=Linear --benchmark_out=bench/results/ops_bench.json
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "steno/ops/activation.h"
#include "steno/ops/attention.h"
#include "steno/ops/conv.h"
#include "steno/ops/elementwise.h"
#include "steno/ops/gemm.h"
#include "steno/ops/lstm.h"
#include "steno/ops/norm.h"

namespace steno::ops {
namespace {

constexpr int64_t kT = 125, kD = 1024, kHeads = 8, kFF = 4096, kMels = 1000, kFreq = 128, kSubCh = 256;
constexpr int64_t kLstm = 640;

Tensor random(const Shape& shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (float& x : v) x = dist(gen);
  return Tensor::from_vector(v, shape);
}

Context make_context(benchmark::State& state) {
  const auto backend = state.range(0) == 0 ? GemmBackend::kOneDnn : GemmBackend::kOpenBlas;
  const int threads = static_cast<int>(state.range(1));
  state.SetLabel(std::string(gemm_backend_name(backend)) + " x" + std::to_string(threads));
  return Context::cpu(threads, backend);
}

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iteration / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// With --benchmark_repetitions=N, "min" (best time) and "max" (best rate) beside the mean: on a shared machine
// the best of several runs is the figure least disturbed by other processes.
void best_of(benchmark::internal::Benchmark* b) {
  b->ComputeStatistics("min", [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); });
  b->ComputeStatistics("max", [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); });
}

// {backend, threads} for both backends, 1 and 2 threads.
void both_backends(benchmark::internal::Benchmark* b) {
  b->ArgNames({"gemm", "threads"});
  for (int backend : {0, 1})
    for (int threads : {1, 2}) b->Args({backend, threads});
  b->Unit(benchmark::kMicrosecond)->UseRealTime()->Apply(best_of);
}
// {0, threads}: ops that do not call a GEMM library.
void threads_only(benchmark::internal::Benchmark* b) {
  b->ArgNames({"gemm", "threads"});
  for (int threads : {1, 2}) b->Args({0, threads});
  b->Unit(benchmark::kMicrosecond)->UseRealTime()->Apply(best_of);
}

// ---- matrix products ----

template <int64_t M, int64_t K, int64_t N>
void BM_Linear(benchmark::State& state) {
  Context ctx = make_context(state);
  const Tensor x = random({M, K}, 1), w = random({N, K}, 2, 0.05f);
  Tensor y = Tensor::empty({M, N});
  for (auto _ : state) linear(ctx, x, w, Tensor(), y);
  set_flops(state, 2.0 * M * N * K);
}
// q/k/v/out/pos projections, feed-forward in and out, subsampling output, joint encoder projection.
BENCHMARK(BM_Linear<kT, kD, kD>)->Apply(both_backends);
BENCHMARK(BM_Linear<kT, kD, kFF>)->Apply(both_backends);
BENCHMARK(BM_Linear<kT, kFF, kD>)->Apply(both_backends);
BENCHMARK(BM_Linear<kT, kSubCh * 16, kD>)->Apply(both_backends);
BENCHMARK(BM_Linear<kT, kD, kLstm>)->Apply(both_backends);

// ---- subsampling convolutions (dw_striding) ----

void conv_bench(benchmark::State& state, const Shape& x_shape, const Shape& w_shape, int stride, int pad,
                int groups) {
  Context ctx = make_context(state);
  const Tensor x = random(x_shape, 3), w = random(w_shape, 4, 0.1f), b = random({w_shape[0]}, 5);
  const int64_t ho = (x_shape[2] + 2 * pad - w_shape[2]) / stride + 1;
  const int64_t wo = (x_shape[3] + 2 * pad - w_shape[3]) / stride + 1;
  Tensor y = Tensor::empty({x_shape[0], w_shape[0], ho, wo});
  for (auto _ : state) conv2d(ctx, x, w, b, y, stride, stride, pad, pad, groups);
  set_flops(state, 2.0 * y.numel() * w_shape[1] * w_shape[2] * w_shape[3]);
}
void BM_Conv_Sub0(benchmark::State& s) { conv_bench(s, {1, 1, kMels, kFreq}, {kSubCh, 1, 3, 3}, 2, 1, 1); }
void BM_Conv_Sub2Depthwise(benchmark::State& s) {
  conv_bench(s, {1, kSubCh, kMels / 2, kFreq / 2}, {kSubCh, 1, 3, 3}, 2, 1, kSubCh);
}
void BM_Conv_Sub3Pointwise(benchmark::State& s) {
  conv_bench(s, {1, kSubCh, kMels / 4, kFreq / 4}, {kSubCh, kSubCh, 1, 1}, 1, 0, 1);
}
void BM_Conv_Sub5Depthwise(benchmark::State& s) {
  conv_bench(s, {1, kSubCh, kMels / 4, kFreq / 4}, {kSubCh, 1, 3, 3}, 2, 1, kSubCh);
}
void BM_Conv_Sub6Pointwise(benchmark::State& s) {
  conv_bench(s, {1, kSubCh, kMels / 8, kFreq / 8}, {kSubCh, kSubCh, 1, 1}, 1, 0, 1);
}
BENCHMARK(BM_Conv_Sub0)->Apply(both_backends);
BENCHMARK(BM_Conv_Sub2Depthwise)->Apply(threads_only);
BENCHMARK(BM_Conv_Sub3Pointwise)->Apply(both_backends);
BENCHMARK(BM_Conv_Sub5Depthwise)->Apply(threads_only);
BENCHMARK(BM_Conv_Sub6Pointwise)->Apply(both_backends);

// ---- conformer conv module pieces ----

void BM_DepthwiseConv1d(benchmark::State& state) {
  Context ctx = make_context(state);
  const Tensor x = random({1, kT, kD}, 6), w = random({kD, 9}, 7), b = random({kD}, 8);
  Tensor y = Tensor::empty({1, kT, kD});
  for (auto _ : state) depthwise_conv1d(ctx, x, w, b, y, 4, 4);
  set_flops(state, 2.0 * kT * kD * 9);
}
BENCHMARK(BM_DepthwiseConv1d)->Apply(threads_only);

void BM_Glu(benchmark::State& state) {
  Context ctx = make_context(state);
  const Tensor x = random({1, kT, 2 * kD}, 9);
  Tensor y = Tensor::empty({1, kT, kD});
  for (auto _ : state) glu(ctx, x, y);
  state.SetItemsProcessed(state.iterations() * kT * kD);
}
BENCHMARK(BM_Glu)->Apply(threads_only);

void BM_BatchNorm(benchmark::State& state) {
  Context ctx = make_context(state);
  const Tensor x = random({1, kT, kD}, 10), m = random({kD}, 11), g = random({kD}, 12), b = random({kD}, 13);
  const Tensor var = random({kD}, 14, 0.5f);
  Tensor v = Tensor::empty({kD});
  for (int64_t i = 0; i < kD; ++i) v.data<float>()[i] = 1.0f + var.data<float>()[i];
  Tensor y = Tensor::empty({1, kT, kD});
  for (auto _ : state) batch_norm(ctx, x, m, v, g, b, 1e-5f, y);
  state.SetItemsProcessed(state.iterations() * kT * kD);
}
BENCHMARK(BM_BatchNorm)->Apply(threads_only);

// ---- norms, activations, glue ----

void BM_LayerNorm(benchmark::State& state) {
  Context ctx = make_context(state);
  const Tensor x = random({1, kT, kD}, 15), g = random({kD}, 16), b = random({kD}, 17);
  Tensor y = Tensor::empty({1, kT, kD});
  for (auto _ : state) layer_norm(ctx, x, g, b, 1e-5f, y);
  state.SetItemsProcessed(state.iterations() * kT * kD);
}
BENCHMARK(BM_LayerNorm)->Apply(threads_only);

void BM_Silu(benchmark::State& state) {  // after the feed-forward's first linear
  Context ctx = make_context(state);
  const Tensor x = random({1, kT, kFF}, 18, 4.0f);
  Tensor y = Tensor::empty({1, kT, kFF});
  for (auto _ : state) silu(ctx, x, y);
  state.SetItemsProcessed(state.iterations() * kT * kFF);
}
BENCHMARK(BM_Silu)->Apply(threads_only);

void BM_Relu(benchmark::State& state) {  // after subsampling conv.0, [256, 500, 64]
  Context ctx = make_context(state);
  const Tensor x = random({kSubCh, kMels / 2, kFreq / 2}, 19);
  Tensor y = Tensor::empty(x.shape());
  for (auto _ : state) relu(ctx, x, y);
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(BM_Relu)->Apply(threads_only);

void BM_Softmax(benchmark::State& state) {  // attention-sized rows: H*T rows of T
  Context ctx = make_context(state);
  Tensor x = random({kHeads * kT, kT}, 20, 4.0f);
  Tensor y = Tensor::empty(x.shape());
  for (auto _ : state) softmax(ctx, x, y);
  state.SetItemsProcessed(state.iterations() * x.numel());
}
BENCHMARK(BM_Softmax)->Apply(threads_only);

void BM_AddResidual(benchmark::State& state) {
  Context ctx = make_context(state);
  Tensor a = random({1, kT, kD}, 21);
  const Tensor b = random({1, kT, kD}, 22);
  for (auto _ : state) add(ctx, a, b, 0.5f, a);
  state.SetItemsProcessed(state.iterations() * kT * kD);
}
BENCHMARK(BM_AddResidual)->Apply(threads_only);

// A whole macaron feed-forward module, r += 0.5 * linear2(silu(linear1(LN(r)))): GEMMs on the library's
// threads alternating with pool work, to expose hand-over costs between the two (compare with the parts).
void BM_FeedForwardModule(benchmark::State& state) {
  Context ctx = make_context(state);
  Tensor r = random({1, kT, kD}, 36);
  const Tensor g = random({kD}, 37), b = random({kD}, 38);
  const Tensor w1 = random({kFF, kD}, 39, 0.03f), w2 = random({kD, kFF}, 40, 0.015f);
  Tensor ln = Tensor::empty({1, kT, kD}), h = Tensor::empty({1, kT, kFF}), o = Tensor::empty({1, kT, kD});
  for (auto _ : state) {
    layer_norm(ctx, r, g, b, 1e-5f, ln);
    linear(ctx, ln, w1, Tensor(), h);
    silu(ctx, h, h);
    linear(ctx, h, w2, Tensor(), o);
    add(ctx, r, o, 0.5f, r);
  }
  set_flops(state, 2.0 * 2 * kT * kD * kFF);
}
BENCHMARK(BM_FeedForwardModule)->Apply(both_backends);

// ---- attention ----

// state.range(2): T; state.range(3): window side w (-1 = full attention).
void BM_RelPosAttention(benchmark::State& state) {
  Context ctx = make_context(state);
  const int64_t t = state.range(2), w = state.range(3);
  const int64_t dk = kD / kHeads, r = w < 0 ? t - 1 : w;
  const Tensor q = random({1, t, kD}, 23), k = random({1, t, kD}, 24), v = random({1, t, kD}, 25);
  const Tensor pos = random({2 * r + 1, kD}, 26), u = random({kHeads, dk}, 27), vb = random({kHeads, dk}, 28);
  Tensor out = Tensor::empty({1, t, kD});
  for (auto _ : state) rel_pos_attention(ctx, q, k, v, pos, u, vb, {t}, {w, w}, out);
  const double keys = w < 0 ? t : std::min<double>(t, 2 * w + 1);
  set_flops(state, 2.0 * kHeads * t * keys * dk * 3);  // AC, BD and P·V over the visible keys
}
BENCHMARK(BM_RelPosAttention)
    ->ArgNames({"gemm", "threads", "T", "w"})
    ->Args({0, 1, kT, -1})->Args({0, 2, kT, -1})->Args({1, 1, kT, -1})->Args({1, 2, kT, -1})
    // Long audio: 2 and 8 minutes, full versus NeMo's rel_pos_local_attn [128, 128] (linear in T).
    ->Args({0, 2, 1500, -1})->Args({0, 2, 1500, 128})->Args({0, 2, 6000, 128})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Apply(best_of);

// ---- prediction network ----

void BM_LstmCell(benchmark::State& state) {  // one decoder step of one 640-unit layer, batch range(2)
  Context ctx = make_context(state);
  const int64_t b = state.range(2);
  const Tensor x = random({b, kLstm}, 29), w_ih = random({4 * kLstm, kLstm}, 30, 0.05f);
  const Tensor w_hh = random({4 * kLstm, kLstm}, 31, 0.05f), b_ih = random({4 * kLstm}, 32);
  const Tensor b_hh = random({4 * kLstm}, 33);
  Tensor h = random({b, kLstm}, 34), c = random({b, kLstm}, 35);
  for (auto _ : state) lstm_cell(ctx, x, h, c, w_ih, w_hh, b_ih, b_hh, h, c);
  set_flops(state, 2.0 * b * 4 * kLstm * 2 * kLstm);
}
BENCHMARK(BM_LstmCell)
    ->ArgNames({"gemm", "threads", "B"})
    ->ArgsProduct({{0, 1}, {1, 2}, {1, 8}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime()
    ->Apply(best_of);

}  // namespace
}  // namespace steno::ops

BENCHMARK_MAIN();
