// The encoder's relative positional table is made once per context and viewed at every run's length
// (encoder.cc, position_table): a view of a longer table must be the shorter table, and runs of any length in
// any order in one context must give what a fresh context gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "steno/asr/model.h"

namespace steno::asr {
namespace {

TEST(RelativePositions, ARowIsItsPositionWhateverTheTableLength) {
  const int d = 64;
  const Tensor longer = ConformerEncoder::relative_positions(700, d);
  const Tensor shorter = ConformerEncoder::relative_positions(100, d);
  const Tensor view = longer.narrow0(700 - 100, 700 + 100 + 1);
  ASSERT_EQ(view.shape(), shorter.shape());
  EXPECT_EQ(std::memcmp(view.raw(), shorter.raw(), shorter.numel() * sizeof(float)), 0);
}

// Encoder output for `seconds` of noise through `ctx`.
Tensor encode_noise(const AsrModel& model, ops::Context& ctx, double seconds) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> audio(static_cast<size_t>(seconds * model.sample_rate()));
  for (float& s : audio) s = noise(rng);
  const Features f = model.features().compute(ctx, {audio});
  return model.encoder().forward(ctx, f.values, f.lengths).encoded;
}

TEST(RelativePositions, OneContextGivesWhatFreshContextsGiveAtEveryLength) {
  const auto model = AsrModel::load(std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en");
  ops::Context shared = ops::Context::cpu(2);
  // Short, then past the first table's 512 positions (its table is made again, longer), then short again.
  for (double seconds : {3.0, 50.0, 2.0}) {
    ops::Context fresh = ops::Context::cpu(2);
    const Tensor want = encode_noise(*model, fresh, seconds);
    const Tensor got = encode_noise(*model, shared, seconds);
    ASSERT_EQ(got.shape(), want.shape()) << seconds << " s";
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.numel() * sizeof(float)), 0) << seconds << " s";
  }
}

}  // namespace
}  // namespace steno::asr
