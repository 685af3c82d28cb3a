#include "steno/asr/weight_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "steno/asr/random_model.h"
#include "steno/core/safetensors.h"
#include "test_util.h"

namespace steno::asr {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::nemo_tiny;
using ::testing::HasSubstr;
using ::testing::Not;

using TensorList = std::vector<std::pair<std::string, Tensor>>;

class WeightStoreTest : public testing::TempDirTest {
 protected:
  // Reads <dir>/model.safetensors into memory, lets `edit` change the list, and writes it back.
  void rewrite(const std::function<void(TensorList&)>& edit) {
    TensorList tensors;
    {
      const SafeTensorsFile f = SafeTensorsFile::open(dir_ / "model.safetensors");
      for (const std::string& n : f.names()) tensors.emplace_back(n, f.get(n).clone());
    }
    edit(tensors);
    write_safetensors(dir_ / "model.safetensors", tensors);
  }
  static TensorList::iterator find(TensorList& l, const std::string& name) {
    auto it = std::find_if(l.begin(), l.end(), [&](const auto& p) { return p.first == name; });
    EXPECT_NE(it, l.end()) << name;
    return it;
  }
};

TEST_F(WeightStoreTest, LoadsARandomModel) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 1);
  const WeightStore w = WeightStore::open(dir_, c);
  EXPECT_EQ(w.storage_dtype(), DType::kF32);
  EXPECT_EQ(w.num_tensors(), 83);  // 85 minus the front-end buffers
  for (const WeightSpec& s : expected_weights(c)) {
    EXPECT_EQ(w.has(s.name), !s.optional) << s.name;
    if (s.optional) continue;
    const Tensor t = w.get(s.name);
    EXPECT_EQ(t.shape(), s.shape) << s.name;
    EXPECT_EQ(t.dtype(), DType::kF32);
  }
  // The same store through the file path; f32 tensors are views of the mapping, handed out without copies.
  const WeightStore w2 = WeightStore::open(dir_ / "model.safetensors", c);
  EXPECT_EQ(w2.get("joint.enc.weight").raw(), w2.get("joint.enc.weight").raw());
  EXPECT_EQ(w2.nbytes(), static_cast<size_t>(parameter_count(c) + 4 * 96) * 4);
  // Absent optional tensors, unknown names, aliases.
  EXPECT_FALSE(w.has("preprocessor.featurizer.fb"));
  expect_error([&] { w.get("preprocessor.featurizer.fb"); }, ErrorCode::kNotFound,
               {"preprocessor.featurizer.fb", "optional and absent"});
  EXPECT_FALSE(w.has("encoder.layers.0.feed_forward1.linear1.bias"));
  expect_error([&] { w.get("encoder.nope"); }, ErrorCode::kNotFound, {"encoder.nope"});
  EXPECT_TRUE(w.has("joint.joint_net.1.weight"));
  EXPECT_EQ(w.get("joint.joint_net.1.weight").raw(), w.get("joint.joint_net.2.weight").raw());
}

TEST_F(WeightStoreTest, RandomValuesFollowPyTorchInit) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 7);
  const WeightStore w = WeightStore::open(dir_, c);
  auto all = [](const Tensor& t, float v) {
    for (float x : t.to_vector())
      if (x != v) return false;
    return true;
  };
  EXPECT_TRUE(all(w.get("encoder.layers.0.norm_out.weight"), 1.0f));
  EXPECT_TRUE(all(w.get("encoder.layers.0.norm_out.bias"), 0.0f));
  EXPECT_TRUE(all(w.get("encoder.layers.1.conv.batch_norm.weight"), 1.0f));
  EXPECT_TRUE(all(w.get("encoder.layers.1.conv.batch_norm.running_mean"), 0.0f));
  EXPECT_TRUE(all(w.get("encoder.layers.1.conv.batch_norm.running_var"), 1.0f));
  // Uniform in ±1/sqrt(fan_in): fills the range, mean near 0.
  const std::vector<float> q = w.get("encoder.layers.0.self_attn.linear_q.weight").to_vector();
  const float bound = 1.0f / std::sqrt(96.0f);
  float lo = 1, hi = -1;
  double sum = 0;
  for (float x : q) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  EXPECT_GE(lo, -bound);
  EXPECT_LT(hi, bound);
  EXPECT_LT(lo, -0.95f * bound);
  EXPECT_GT(hi, 0.95f * bound);
  EXPECT_LT(std::abs(sum / q.size()), 0.01);
  // Embedding: N(0, 1) with the blank row (128) zero.
  const Tensor emb = w.get("decoder.prediction.embed.weight");
  const std::vector<float> e = emb.to_vector();
  double sq = 0;
  for (int64_t i = 0; i < 128 * 64; ++i) sq += double(e[i]) * e[i];
  EXPECT_NEAR(sq / (128 * 64), 1.0, 0.1);
  for (int64_t i = 128 * 64; i < 129 * 64; ++i) EXPECT_EQ(e[i], 0.0f);
  // Distinct tensors get distinct streams.
  EXPECT_NE(w.get("encoder.layers.0.self_attn.linear_q.weight").to_vector(),
            w.get("encoder.layers.0.self_attn.linear_k.weight").to_vector());
}

TEST_F(WeightStoreTest, SameSeedSameBytes) {
  const ModelConfig c = nemo_tiny();
  auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write_random_model(c, dir_ / "a", 3);
  write_random_model(c, dir_ / "b", 3);
  write_random_model(c, dir_ / "c", 4);
  EXPECT_EQ(bytes(dir_ / "a/model.safetensors"), bytes(dir_ / "b/model.safetensors"));
  EXPECT_NE(bytes(dir_ / "a/model.safetensors"), bytes(dir_ / "c/model.safetensors"));
}

TEST_F(WeightStoreTest, HalfPrecisionStorageIsConvertedAtLoad) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_ / "f32", 5, DType::kF32);
  write_random_model(c, dir_ / "f16", 5, DType::kF16);
  write_random_model(c, dir_ / "bf16", 5, DType::kBF16);
  EXPECT_EQ(SafeTensorsFile::open(dir_ / "f16/model.safetensors").info("joint.enc.weight").dtype, DType::kF16);
  const WeightStore w32 = WeightStore::open(dir_ / "f32", c);
  const WeightStore w16 = WeightStore::open(dir_ / "f16", c);
  const WeightStore wb16 = WeightStore::open(dir_ / "bf16", c);
  EXPECT_EQ(w16.storage_dtype(), DType::kF16);
  EXPECT_EQ(wb16.storage_dtype(), DType::kBF16);
  for (const WeightSpec& s : expected_weights(c)) {
    if (s.optional) continue;
    const std::vector<float> ref = w32.get(s.name).to_vector();
    const Tensor h = w16.get(s.name), b = wb16.get(s.name);
    ASSERT_EQ(h.dtype(), DType::kF32);
    ASSERT_EQ(b.dtype(), DType::kF32);
    const std::vector<float> hv = h.to_vector(), bv = b.to_vector();
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(hv[i], f16_to_f32(f32_to_f16(ref[i]))) << s.name << "[" << i << "]";
      ASSERT_EQ(bv[i], bf16_to_f32(f32_to_bf16(ref[i]))) << s.name << "[" << i << "]";
    }
  }
}

TEST_F(WeightStoreTest, ExactHalfConversions) {
  // Hand-made f16 / bf16 values, including the extremes, convert exactly.
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  const std::vector<uint16_t> h = {0x3e00, 0xc080, 0x7bff, 0x0001, 0x8000, 0x3c00};  // 1.5 -2.25 65504 2^-24 -0 1
  const std::vector<float> h_want = {1.5f, -2.25f, 65504.0f, std::ldexp(1.0f, -24), -0.0f, 1.0f};
  const std::vector<uint16_t> b = {0x3fc0, 0xc010, 0x7f7f, 0x0001, 0x8000, 0x3f80};  // 1.5 -2.25 max tiny -0 1
  const std::vector<float> b_want = {1.5f, -2.25f, 3.3895313892515355e38f, std::ldexp(1.0f, -133), -0.0f, 1.0f};
  rewrite([&](TensorList& l) {
    // The per-layer LayerNorm shapes are [96]; put the six values first.
    Tensor th = Tensor::zeros({96}, DType::kF16), tb = Tensor::zeros({96}, DType::kBF16);
    std::copy(h.begin(), h.end(), static_cast<uint16_t*>(th.raw()));
    std::copy(b.begin(), b.end(), static_cast<uint16_t*>(tb.raw()));
    find(l, "encoder.layers.0.norm_out.weight")->second = th;
    find(l, "encoder.layers.0.norm_out.bias")->second = tb;
  });
  const WeightStore w = WeightStore::open(dir_, c);
  EXPECT_EQ(w.storage_dtype(), DType::kF32);  // mixed: the widest
  const std::vector<float> hv = w.get("encoder.layers.0.norm_out.weight").to_vector();
  const std::vector<float> bv = w.get("encoder.layers.0.norm_out.bias").to_vector();
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(hv[i], h_want[i]) << i;
    EXPECT_EQ(std::signbit(hv[i]), std::signbit(h_want[i])) << i;
    EXPECT_EQ(bv[i], b_want[i]) << i;
  }
}

TEST_F(WeightStoreTest, WrongShapeNamesTheTensor) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  rewrite([&](TensorList& l) { find(l, "encoder.layers.1.self_attn.linear_v.weight")->second = Tensor::zeros({96, 95}); });
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kInvalidArgument,
               {"model.safetensors does not match its config (1 problem)",
                "encoder.layers.1.self_attn.linear_v.weight: shape [96, 95], expected [96, 96]"});
}

TEST_F(WeightStoreTest, MissingTensorNamesTheTensor) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  rewrite([&](TensorList& l) { l.erase(find(l, "decoder.prediction.dec_rnn.lstm.bias_hh_l1")); });
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kNotFound,
               {"decoder.prediction.dec_rnn.lstm.bias_hh_l1: missing (expected [256])"});
}

TEST_F(WeightStoreTest, ExtraTensorNamesTheTensor) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  rewrite([&](TensorList& l) { l.emplace_back("encoder.layers.0.mystery", Tensor::zeros({3, 4})); });
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kInvalidArgument,
               {"encoder.layers.0.mystery: unexpected tensor [3, 4]"});
}

TEST_F(WeightStoreTest, NonFloatTensorIsRejected) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  rewrite([&](TensorList& l) { find(l, "joint.enc.bias")->second = Tensor::zeros({64}, DType::kI32); });
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kInvalidArgument,
               {"joint.enc.bias: dtype i32, expected f32, f16 or bf16"});
}

TEST_F(WeightStoreTest, AllProblemsInOneMessage) {
  // The file of a use_bias model against a config without biases, one tensor short and one mis-shaped.
  ModelConfig with_bias = nemo_tiny();
  with_bias.encoder.use_bias = true;
  write_random_model(with_bias, dir_, 0);
  rewrite([&](TensorList& l) {
    l.erase(find(l, "joint.pred.weight"));
    find(l, "joint.enc.weight")->second = Tensor::zeros({64, 97});
  });
  try {
    WeightStore::open(dir_, nemo_tiny());
    ADD_FAILURE();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_THAT(msg, HasSubstr("(24 problems)"));  // 22 biases + 1 missing + 1 shape
    EXPECT_THAT(msg, HasSubstr("joint.pred.weight: missing (expected [64, 64])"));
    EXPECT_THAT(msg, HasSubstr("joint.enc.weight: shape [64, 97], expected [64, 96]"));
    EXPECT_THAT(msg, HasSubstr("... and 14 more"));
    EXPECT_THAT(msg, HasSubstr("config.json says encoder.use_bias = false"));
  }
  // The reverse: a config with biases, a file without.
  write_random_model(nemo_tiny(), dir_, 0);
  expect_error([&] { WeightStore::open(dir_, with_bias); }, ErrorCode::kNotFound,
               {"(22 problems)", "encoder.layers.0.feed_forward1.linear1.bias: missing (expected [384])",
                "config.json says encoder.use_bias = true"});
}

TEST_F(WeightStoreTest, JointNetIndexOneIsAccepted) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  Tensor want;
  rewrite([&](TensorList& l) {
    find(l, "joint.joint_net.2.weight")->first = "joint.joint_net.1.weight";
    find(l, "joint.joint_net.2.bias")->first = "joint.joint_net.1.bias";
    want = find(l, "joint.joint_net.1.weight")->second;
    // NeMo's counters are tolerated.
    l.emplace_back("encoder.layers.0.conv.batch_norm.num_batches_tracked", Tensor::zeros({}, DType::kI64));
  });
  const WeightStore w = WeightStore::open(dir_, c);
  EXPECT_EQ(w.get("joint.joint_net.2.weight").to_vector(), want.to_vector());
  EXPECT_TRUE(w.has("joint.joint_net.1.bias"));
  // Both names at once is ambiguous.
  rewrite([&](TensorList& l) { l.emplace_back("joint.joint_net.2.bias", Tensor::zeros({134})); });
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kInvalidArgument,
               {"joint.joint_net.2.bias: present under more than one name"});
}

TEST_F(WeightStoreTest, FrontEndBuffersAreUsedWhenPresent) {
  const ModelConfig c = nemo_tiny();
  write_random_model(c, dir_, 0);
  rewrite([&](TensorList& l) {
    l.emplace_back("preprocessor.featurizer.window", Tensor::zeros({400}));
    l.emplace_back("preprocessor.featurizer.fb", Tensor::zeros({1, 128, 257}, DType::kBF16));
  });
  const WeightStore w = WeightStore::open(dir_, c);
  EXPECT_TRUE(w.has("preprocessor.featurizer.window"));
  EXPECT_EQ(w.get("preprocessor.featurizer.fb").dtype(), DType::kF32);
  // A mis-shaped buffer is an error like any other.
  rewrite([&](TensorList& l) { find(l, "preprocessor.featurizer.window")->second = Tensor::zeros({512}); });
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kInvalidArgument,
               {"preprocessor.featurizer.window: shape [512], expected [400]"});
}

TEST_F(WeightStoreTest, MissingOrCorruptFiles) {
  const ModelConfig c = nemo_tiny();
  expect_error([&] { WeightStore::open(dir_ / "no_such_model", c); }, ErrorCode::kNotFound, {"no_such_model"});
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kNotFound, {"model.safetensors", "no such file"});
  std::ofstream(dir_ / "model.safetensors", std::ios::binary) << std::string(64, '\xff');
  expect_error([&] { WeightStore::open(dir_, c); }, ErrorCode::kDataLoss, {"model.safetensors"});
}

// The project's golden model directories (written by the Python reference) load as they are.
TEST(WeightStoreGolden, ProjectGoldenModelsLoad) {
  const fs::path root = fs::path(STENO_TEST_DATA) / "golden";
  int n = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (!fs::exists(entry.path() / "config.json") || !fs::exists(entry.path() / "model.safetensors")) continue;
    SCOPED_TRACE(entry.path().string());
    const ModelConfig c = ModelConfig::load(entry.path());
    const WeightStore w = WeightStore::open(entry.path(), c);
    EXPECT_GT(w.num_tensors(), 0);
    ++n;
  }
  if (n == 0) GTEST_SKIP() << "no golden model directories under " << root;
}

}  // namespace
}  // namespace steno::asr
