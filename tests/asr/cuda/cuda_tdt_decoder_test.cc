// The CUDA TDT decoder against the CPU decoder (the reference) on the same encoder output:
//   - the bundled model on committed test clips, f32: identical tokens, timestamps, durations and step counts in
//     every loop mode (persistent kernel, graph while-node, unrolled graph, eager), and again on a reused
//     workspace;
//   - the same clips in bf16 and f16, persistent and step by step: the same tokens (an expectation of this test
//     set, not a law: a lower precision may flip a near-tied decision);
//   - random weights with Parakeet-0.6B's decoder shapes at batch sizes that are not buckets (5, 33), with a
//     clip of length 0; a small random model with durations {0, 1} and max_symbols 2 and 10, which forces
//     progress on stuck frames and emits more tokens than frames (the output-capacity retry);
//   - argument errors.
// With random weights some decisions are near ties, where f32 rounding (GPU vs CPU summation order) may pick
// the other token; clips with a decision closer than kTie are left out of the exact comparison, and the test
// requires most clips to be compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>
#include <span>
#include <unistd.h>

#include "cuda_tdt_decoder.h"
#include "steno/asr/model.h"
#include "steno/asr/random_model.h"
#include "steno/asr/weight_store.h"
#include "steno/audio/decode.h"
#include "steno/core/cuda.h"
#include "steno/ops/copy.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;

constexpr float kTie = 2e-5f;  // logit gap under which f32 rounding may flip a decision
// A way to run the decode loop: the loop, and for the persistent kernel its blocks' roles.
struct Mode {
  TdtLoop loop;
  bool dedicated = false;  // CudaDecodeOptions::persistent_dedicated_max_rows: all buckets or none
  std::string name() const { return std::string(tdt_loop_name(loop)) + (dedicated ? " (dedicated roles)" : ""); }
};
const Mode kModes[] = {{TdtLoop::kPersistent, false}, {TdtLoop::kPersistent, true}, {TdtLoop::kGraphWhile},
                       {TdtLoop::kGraphUnrolled}, {TdtLoop::kEager}};

struct Encoded {
  Tensor values;  // [B, T, d_model] f32 on the CPU
  std::vector<int64_t> lengths;
};

// The bundled model and the encoder output of six espeak test clips in one padded batch (loaded once).
struct BundledFixture {
  std::shared_ptr<const AsrModel> model;
  Encoded encoded;
};

const BundledFixture& bundled() {
  static const BundledFixture f = [] {
    BundledFixture r;
    r.model = AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
    ops::Context cpu = ops::Context::cpu();
    std::vector<std::vector<float>> pcm;
    for (int i : {0, 3, 5, 7, 9, 12}) {
      char name[64];
      std::snprintf(name, sizeof name, "testset/espeak/audio/test-%07d.flac", i);
      pcm.push_back(audio::load_audio_file((fs::path(STENO_TEST_DATA) / name).string()).samples);
    }
    std::vector<std::span<const float>> clips(pcm.begin(), pcm.end());
    const Features feats = r.model->features().compute(cpu, clips);
    EncoderOutput out = r.model->encoder().forward(cpu, feats.values, feats.lengths);
    r.encoded = {out.encoded, out.lengths};
    return r;
  }();
  return f;
}

// Random encoder output, N(0, 1), with the given valid lengths.
Encoded random_encoded(int64_t batch, int64_t frames, int64_t d_model, std::vector<int64_t> lengths, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  Tensor x = Tensor::empty({batch, frames, d_model});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = normal(rng);
  return {x, std::move(lengths)};
}

// A model directory with random weights, written once per process under the temp dir and removed at exit.
fs::path random_model_dir(const std::string& name, const ModelConfig& config) {
  struct Written {
    std::vector<fs::path> dirs;
    ~Written() {
      std::error_code ec;
      for (const fs::path& d : dirs) fs::remove_all(d, ec);
    }
  };
  static Written written;
  const fs::path dir = fs::temp_directory_path() / ("steno_asr_cuda_test_" + std::to_string(::getpid()) + "_" + name);
  if (!fs::exists(dir / "model.safetensors")) {
    write_random_model(config, dir, 7, DType::kBF16);
    written.dirs.push_back(dir);
  }
  return dir;
}

// Parakeet-TDT-0.6B's decoder and joint (V 1024, 2 x 640 LSTM, joint 640, d_model 1024) behind a one-layer
// encoder, so that the weights file stays small.
ModelConfig parakeet_decoder_config() {
  ModelConfig c = ModelConfig::load_file(fs::path(STENO_SOURCE_DIR) / "configs/parakeet-tdt-0.6b-v2.json");
  c.encoder.n_layers = 1;
  c.encoder.ff_expansion_factor = 1;
  c.encoder.subsampling_conv_channels = 8;
  c.validate();
  return c;
}

// A small model whose durations are {0, 1}: tokens pile up on frames.
ModelConfig sticky_config() {
  ModelConfig c = ModelConfig::load(fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en");
  c.encoder.n_layers = 1;
  c.decoder = {64, 48, 2};
  c.joint.num_classes = 64;
  c.joint.joint_hidden = 40;
  c.joint.num_extra_outputs = 2;
  c.decoding.durations = {0, 1};
  c.labels.clear();
  c.validate();
  return c;
}

// The gap between the largest and second-largest of [first, last) (infinite for fewer than two).
float top_gap(const float* first, const float* last) {
  float a = -std::numeric_limits<float>::infinity(), b = a;
  for (const float* p = first; p != last; ++p) {
    if (*p > a) {
      b = a;
      a = *p;
    } else if (*p > b) {
      b = *p;
    }
  }
  return last - first < 2 ? std::numeric_limits<float>::infinity() : a - b;
}

// How close the CPU decoder's closest decision for this clip came to a tie (from its alignments).
float min_margin(const Hypothesis& h, int blank) {
  float m = std::numeric_limits<float>::infinity();
  for (const auto& row : h.step_logits) {
    m = std::min(m, top_gap(row.data(), row.data() + blank + 1));
    m = std::min(m, top_gap(row.data() + blank + 1, row.data() + row.size()));
  }
  return m;
}

struct GpuRun {
  std::vector<Hypothesis> hyps;
  DecodeStats stats;
};

GpuRun run_gpu(ops::Context& gpu, const CudaTdtDecoder& dec, CudaTdtDecoder::Workspace& ws, const Encoded& e,
               DType dtype, Mode mode, int64_t initial_token_capacity = 0) {
  const Tensor x = ops::to_context(gpu, e.values, dtype);
  GpuRun r;
  CudaDecodeOptions options;
  options.loop = mode.loop;
  options.initial_token_capacity = initial_token_capacity;
  options.persistent_min_rows = 1;  // every bucket of these tests through the persistent kernel
  options.persistent_max_rows = 256;
  options.persistent_dedicated_max_rows = mode.dedicated ? 256 : 0;
  r.hyps = dec.decode(gpu, ws, x, e.lengths, options, &r.stats);
  return r;
}

// 227 KB of shared memory a block (sm_90, sm_100): the weights of the bundled model (f32) and of the 0.6B
// decoder (bf16) then stay resident, and a full grid of the persistent kernel can take dedicated roles.
bool hopper_shared_memory() {
  const int major = steno::cuda::device_info(0).sm_major;
  return major == 9 || major == 10;
}

void expect_same_hyp(const Hypothesis& cpu, const Hypothesis& gpu, const std::string& what) {
  EXPECT_EQ(gpu.tokens, cpu.tokens) << what;
  EXPECT_EQ(gpu.timestamps, cpu.timestamps) << what;
  EXPECT_EQ(gpu.durations, cpu.durations) << what;
}

// Compares every clip whose CPU decisions all had a margin of at least kTie; returns how many were compared.
int expect_same_where_clear(const std::vector<Hypothesis>& cpu, const std::vector<Hypothesis>& gpu, int blank,
                            const std::string& what) {
  EXPECT_EQ(gpu.size(), cpu.size()) << what;
  int compared = 0;
  for (size_t b = 0; b < std::min(cpu.size(), gpu.size()); ++b) {
    const float margin = min_margin(cpu[b], blank);
    if (margin < kTie) {
      std::printf("[ note ] %s clip %zu: a decision within %.2g of a tie, not compared\n", what.c_str(), b, margin);
      continue;
    }
    expect_same_hyp(cpu[b], gpu[b], what + " clip " + std::to_string(b));
    ++compared;
  }
  return compared;
}

// Invariants of any decoding: tokens in range, frames within the clip and non-decreasing, durations allowed.
void expect_well_formed(const std::vector<Hypothesis>& hyps, const std::vector<int64_t>& lengths, int blank,
                        const std::vector<int>& durations, int max_symbols) {
  for (size_t b = 0; b < hyps.size(); ++b) {
    const Hypothesis& h = hyps[b];
    ASSERT_EQ(h.tokens.size(), h.timestamps.size());
    ASSERT_EQ(h.tokens.size(), h.durations.size());
    EXPECT_LE(static_cast<int64_t>(h.tokens.size()), lengths[b] * max_symbols) << "clip " << b;
    for (size_t i = 0; i < h.tokens.size(); ++i) {
      EXPECT_TRUE(h.tokens[i] >= 0 && h.tokens[i] < blank) << "clip " << b << " token " << i;
      EXPECT_TRUE(h.timestamps[i] >= 0 && h.timestamps[i] < lengths[b]) << "clip " << b << " token " << i;
      if (i > 0) {
        EXPECT_GE(h.timestamps[i], h.timestamps[i - 1]) << "clip " << b << " token " << i;
      }
      EXPECT_NE(std::find(durations.begin(), durations.end(), h.durations[i]), durations.end());
    }
  }
}

TEST(CudaTdtDecoder, BundledModelF32MatchesCpuInEveryLoopMode) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const BundledFixture& f = bundled();
  ops::Context cpu = ops::Context::cpu();
  DecodeStats cpu_stats;
  const auto ref = f.model->decoder().decode(cpu, f.encoded.values, f.encoded.lengths, true, &cpu_stats);
  for (size_t b = 0; b < ref.size(); ++b) {
    EXPECT_FALSE(ref[b].tokens.empty()) << "clip " << b;
    std::printf("[ note ] clip %zu: %zu tokens, closest decision %.3g from a tie\n", b, ref[b].tokens.size(),
                min_margin(ref[b], f.model->decoder().blank_id()));
  }

  ops::Context gpu = ops::Context::cuda(0);
  const CudaTdtDecoder dec(f.model->decoder(), gpu, DType::kF32);
  for (const Mode& mode : kModes) {
    const TdtLoop loop = mode.loop;
    CudaTdtDecoder::Workspace ws;
    for (int round = 0; round < 2; ++round) {  // the second round replays what the first captured
      const std::string what = mode.name() + " round " + std::to_string(round);
      const GpuRun r = run_gpu(gpu, dec, ws, f.encoded, DType::kF32, mode);
      ASSERT_EQ(r.hyps.size(), ref.size());
      for (size_t b = 0; b < ref.size(); ++b) expect_same_hyp(ref[b], r.hyps[b], what + " clip " + std::to_string(b));
      EXPECT_EQ(r.stats.steps, cpu_stats.steps) << what;
      EXPECT_EQ(r.stats.lstm_updates, cpu_stats.lstm_updates) << what;
      EXPECT_EQ(ws.num_buckets(), 1) << what;
      const bool stepwise = loop == TdtLoop::kEager || loop == TdtLoop::kPersistent;
      EXPECT_EQ(ws.num_graphs(), stepwise ? 0 : 1) << what;
    }
    if (loop == TdtLoop::kPersistent) {
      EXPECT_GT(ws.persistent_blocks(), 0) << "the persistent kernel fell back";
      if (hopper_shared_memory()) {
        EXPECT_EQ(ws.persistent_dedicated(), mode.dedicated);
      }
    }
    if (loop == TdtLoop::kGraphWhile) {
      EXPECT_TRUE(ws.while_supported()) << "the while-loop graph fell back";
    }
  }
  // Other grids, the same decisions as the full grid's: one block doing every tile of every phase itself, three
  // (shared roles, several tiles a block), and the smallest grid with dedicated roles, where the blocks without
  // an LSTM tile hold several pred and logits tiles each in their weight slots.
  int tightest = 0;
  for (int g = 1; g <= 1024 && tightest == 0; ++g)
    if (dec.persistent_can_dedicate(g)) tightest = g;
  if (hopper_shared_memory()) {
    EXPECT_GT(tightest, 0);
  }
  for (int grid : {1, 3, tightest}) {
    if (grid == 0) continue;
    CudaTdtDecoder::Workspace ws;
    CudaDecodeOptions options;
    options.loop = TdtLoop::kPersistent;
    options.persistent_blocks = grid;
    options.persistent_min_rows = 1;
    options.persistent_dedicated_max_rows = 256;
    const std::vector<Hypothesis> hyps =
        dec.decode(gpu, ws, ops::to_context(gpu, f.encoded.values, DType::kF32), f.encoded.lengths, options);
    EXPECT_EQ(ws.persistent_blocks(), grid);
    EXPECT_EQ(ws.persistent_dedicated(), grid == tightest);
    for (size_t b = 0; b < ref.size(); ++b)
      expect_same_hyp(ref[b], hyps[b], std::to_string(grid) + " blocks, clip " + std::to_string(b));
  }
}

TEST(CudaTdtDecoder, BundledModelHalfPrecisionGivesTheSameTokens) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const BundledFixture& f = bundled();
  ops::Context cpu = ops::Context::cpu();
  const auto ref = f.model->decoder().decode(cpu, f.encoded.values, f.encoded.lengths);
  ops::Context gpu = ops::Context::cuda(0);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    const CudaTdtDecoder dec(f.model->decoder(), gpu, dtype);
    CudaTdtDecoder::Workspace ws;
    const GpuRun graph = run_gpu(gpu, dec, ws, f.encoded, dtype, {TdtLoop::kGraphWhile});
    const GpuRun eager = run_gpu(gpu, dec, ws, f.encoded, dtype, {TdtLoop::kEager});
    const GpuRun persistent = run_gpu(gpu, dec, ws, f.encoded, dtype, {TdtLoop::kPersistent});
    EXPECT_GT(ws.persistent_blocks(), 0) << "the persistent kernel fell back";
    for (size_t b = 0; b < ref.size(); ++b) {
      EXPECT_EQ(graph.hyps[b].tokens, ref[b].tokens) << dtype_name(dtype) << " clip " << b;
      EXPECT_EQ(persistent.hyps[b].tokens, ref[b].tokens) << dtype_name(dtype) << " persistent, clip " << b;
      // The GPU modes run the same kernels on the same data: bit-identical decisions.
      expect_same_hyp(graph.hyps[b], eager.hyps[b], std::string(dtype_name(dtype)) + " eager vs graph");
    }
  }
}

TEST(CudaTdtDecoder, RandomParakeetDecoderMatchesCpuAtOddBatchSizes) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ModelConfig config = parakeet_decoder_config();
  const WeightStore weights = WeightStore::open(random_model_dir("parakeet", config), config);
  const TdtDecoder cpu_dec(config, weights);
  ops::Context cpu = ops::Context::cpu();
  ops::Context gpu = ops::Context::cuda(0);
  const CudaTdtDecoder dec(cpu_dec, gpu, DType::kF32);
  CudaTdtDecoder::Workspace ws;
  for (int64_t batch : {5, 33}) {
    const int64_t frames = 40;
    std::vector<int64_t> lengths;
    for (int64_t b = 0; b < batch; ++b) lengths.push_back(b == 1 ? 0 : frames - (b * 7) % frames);
    const Encoded e = random_encoded(batch, frames, config.encoder.d_model, lengths, 100 + batch);
    DecodeStats cpu_stats;
    const auto ref = cpu_dec.decode(cpu, e.values, e.lengths, true, &cpu_stats);
    EXPECT_TRUE(ref[1].tokens.empty());
    for (const Mode& mode : kModes) {
      const std::string what = "batch " + std::to_string(batch) + " " + mode.name();
      const GpuRun r = run_gpu(gpu, dec, ws, e, DType::kF32, mode);
      const int compared = expect_same_where_clear(ref, r.hyps, config.blank_id(), what);
      EXPECT_GE(compared, batch * 2 / 3) << what << ": too many near ties for the test to mean much";
      EXPECT_TRUE(r.hyps[1].tokens.empty()) << what;
      if (compared == batch) {
        EXPECT_EQ(r.stats.steps, cpu_stats.steps) << what;
        EXPECT_EQ(r.stats.lstm_updates, cpu_stats.lstm_updates) << what;
      }
    }
  }
  EXPECT_EQ(ws.num_buckets(), 2);  // 8 and 64
}

TEST(CudaTdtDecoder, MaxSymbolsAndMoreTokensThanFramesMatchCpu) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ModelConfig base = sticky_config();
  const WeightStore weights = WeightStore::open(random_model_dir("sticky", base), base);
  ops::Context cpu = ops::Context::cpu();
  ops::Context gpu = ops::Context::cuda(0);
  const int64_t batch = 7, frames = 30;
  const Encoded e = random_encoded(batch, frames, base.encoder.d_model, {30, 0, 29, 1, 17, 30, 2}, 5);
  for (int max_symbols : {2, 10}) {
    ModelConfig config = base;
    config.decoding.max_symbols = max_symbols;
    const TdtDecoder cpu_dec(config, weights);
    const CudaTdtDecoder dec(cpu_dec, gpu, DType::kF32);
    CudaTdtDecoder::Workspace ws;
    const auto ref = cpu_dec.decode(cpu, e.values, e.lengths, true);
    size_t most = 0;
    for (const Hypothesis& h : ref) most = std::max(most, h.tokens.size());
    std::printf("[ note ] max_symbols %d: up to %zu tokens for %lld frames\n", max_symbols, most,
                static_cast<long long>(frames));
    EXPECT_GT(most, 2u) << "the capacity retry is not tested";
    for (const Mode& mode : kModes) {
      for (int64_t capacity : {0, 2}) {  // 2: most clips overflow the first pass and are decoded again
        const std::string what = "max_symbols " + std::to_string(max_symbols) + " " + mode.name() +
                                 " capacity " + std::to_string(capacity);
        const GpuRun r = run_gpu(gpu, dec, ws, e, DType::kF32, mode, capacity);
        EXPECT_GE(expect_same_where_clear(ref, r.hyps, config.blank_id(), what), 5) << what;
        expect_well_formed(r.hyps, e.lengths, config.blank_id(), config.decoding.durations, max_symbols);
      }
    }
  }
}

TEST(CudaTdtDecoder, Bf16LoopModesAgreeAndStayWellFormed) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const ModelConfig config = parakeet_decoder_config();
  const WeightStore weights = WeightStore::open(random_model_dir("parakeet", config), config);
  const TdtDecoder cpu_dec(config, weights);
  ops::Context gpu = ops::Context::cuda(0);
  const CudaTdtDecoder dec(cpu_dec, gpu, DType::kBF16);
  CudaTdtDecoder::Workspace ws;
  const Encoded e = random_encoded(33, 50, config.encoder.d_model, std::vector<int64_t>(33, 50), 9);
  const GpuRun graph = run_gpu(gpu, dec, ws, e, DType::kBF16, {TdtLoop::kGraphWhile});
  expect_well_formed(graph.hyps, e.lengths, config.blank_id(), config.decoding.durations,
                     config.decoding.max_symbols);
  for (TdtLoop loop : {TdtLoop::kGraphUnrolled, TdtLoop::kEager}) {
    const GpuRun r = run_gpu(gpu, dec, ws, e, DType::kBF16, {loop});
    for (size_t b = 0; b < r.hyps.size(); ++b)
      expect_same_hyp(graph.hyps[b], r.hyps[b], std::string(tdt_loop_name(loop)) + " clip " + std::to_string(b));
    EXPECT_EQ(r.stats.steps, graph.stats.steps);
  }
  // The persistent kernel rounds differently (f32 logits and gates, not bf16 ones), so on random weights, whose
  // decisions are often near ties, it may take the other branch somewhere: well-formed, and mostly the same.
  for (bool dedicated : {false, true}) {
    const Mode mode{TdtLoop::kPersistent, dedicated};
    const GpuRun persistent = run_gpu(gpu, dec, ws, e, DType::kBF16, mode);
    EXPECT_GT(ws.persistent_blocks(), 0) << "the persistent kernel fell back";
    if (hopper_shared_memory()) {
      EXPECT_EQ(ws.persistent_dedicated(), dedicated);
    }
    expect_well_formed(persistent.hyps, e.lengths, config.blank_id(), config.decoding.durations,
                       config.decoding.max_symbols);
    int same = 0;
    for (size_t b = 0; b < persistent.hyps.size(); ++b) same += persistent.hyps[b].tokens == graph.hyps[b].tokens;
    std::printf("[ note ] bf16 %s vs graph-while: %d of %zu clips the same\n", mode.name().c_str(), same,
                persistent.hyps.size());
    EXPECT_GE(same, static_cast<int>(persistent.hyps.size()) / 2) << mode.name();
  }
}

TEST(CudaTdtDecoder, EmptyInputsBucketsAndErrors) {
  if (steno::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  const BundledFixture& f = bundled();
  ops::Context gpu = ops::Context::cuda(0);
  const CudaTdtDecoder dec(f.model->decoder(), gpu, DType::kF32);
  CudaTdtDecoder::Workspace ws;
  const Tensor x = ops::to_context(gpu, f.encoded.values, DType::kF32);
  const int64_t frames = x.dim(1);

  // All lengths 0: empty hypotheses, one SOS prediction per clip counted, nothing allocated.
  DecodeStats stats;
  const auto none = dec.decode(gpu, ws, x, std::vector<int64_t>(x.dim(0), 0), &stats);
  ASSERT_EQ(none.size(), static_cast<size_t>(x.dim(0)));
  for (const Hypothesis& h : none) EXPECT_TRUE(h.tokens.empty());
  EXPECT_EQ(stats.steps, 0);
  EXPECT_EQ(stats.lstm_updates, x.dim(0));
  EXPECT_EQ(ws.num_buckets(), 0);

  // Batches of 3 and 4 share bucket 4; a batch of 1 gets its own.
  EXPECT_EQ(CudaTdtDecoder::bucket_size(3), 4);
  EXPECT_EQ(CudaTdtDecoder::bucket_size(33), 64);
  dec.decode(gpu, ws, x.narrow0(0, 3), {frames, frames / 2, 1});
  dec.decode(gpu, ws, x.narrow0(0, 4), {1, 2, 3, 4});
  EXPECT_EQ(ws.num_buckets(), 1);
  dec.decode(gpu, ws, x.narrow0(0, 1), {frames});
  EXPECT_EQ(ws.num_buckets(), 2);
  EXPECT_TRUE(dec.decode(gpu, ws, x.narrow0(0, 0), {}).empty());

  auto expect_code = [](auto&& f, ErrorCode code) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
  };
  CudaDecodeOptions with_alignments;
  with_alignments.keep_alignments = true;
  expect_code([&] { dec.decode(gpu, ws, x, f.encoded.lengths, with_alignments); }, ErrorCode::kUnimplemented);
  expect_code([&] { dec.decode(gpu, ws, x, {1, 2}); }, ErrorCode::kInvalidArgument);  // wrong count
  std::vector<int64_t> too_long = f.encoded.lengths;
  too_long[0] = frames + 1;
  expect_code([&] { dec.decode(gpu, ws, x, too_long); }, ErrorCode::kInvalidArgument);
  const Tensor half = ops::to_context(gpu, f.encoded.values, DType::kBF16);
  expect_code([&] { dec.decode(gpu, ws, half, f.encoded.lengths); }, ErrorCode::kInvalidArgument);
  expect_code([&] { dec.decode(gpu, ws, f.encoded.values, f.encoded.lengths); }, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace steno::asr
