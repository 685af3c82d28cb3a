// The checkpoint's tensors as model.safetensors: every element of a checkpoint made to hold every tensor form
// (strided views, offsets into shared storages, f64 / f16 / bf16, 0-d and empty tensors: tests/data/nemo-pickles)
// equal to torch's own reading after conversion; the file laid out as the converter lays it out. (The byte-equality
// tests of import_test.cc cover real checkpoints, whose tensors are all plain.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "nemo/import_weights.h"
#include "nemo_test_util.h"
#include "steno/core/safetensors.h"

namespace steno::nemo {
namespace {

namespace fs = std::filesystem;

bool is_float(TorchType t) {
  return t == TorchType::kF64 || t == TorchType::kF32 || t == TorchType::kF16 || t == TorchType::kBF16;
}

TEST(ImportWeights, EveryTensorFormConvertedAsTorchReadsIt) {
  const std::vector<uint8_t> archive = testing::bytes_of(testing::kPickles + "made.ckpt");
  std::vector<CheckpointTensor> floats;
  for (CheckpointTensor& t : read_checkpoint(archive))
    if (is_float(t.ref.type)) floats.push_back(t);
  ASSERT_GE(floats.size(), 4u);
  std::ifstream in(testing::kPickles + "made-values.json");
  std::map<std::string, nlohmann::json> want;
  for (const nlohmann::json& t : nlohmann::json::parse(in)) want[t["name"]] = t["values"];

  for (const DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const fs::path file = fs::temp_directory_path() / ("steno_import_weights_" + std::to_string(getpid()));
    write_converted_safetensors(file, floats, dtype);
    const SafeTensorsFile st = SafeTensorsFile::open(file);
    ASSERT_EQ(st.names().size(), floats.size());
    EXPECT_TRUE(std::is_sorted(st.names().begin(), st.names().end()));  // the converter's order: by name
    for (const std::string& name : st.names()) {
      SCOPED_TRACE(name);
      EXPECT_EQ(st.info(name).begin % 8, 0u);
      EXPECT_EQ(st.info(name).dtype, dtype);
      const Tensor got = st.get(name);
      const nlohmann::json& values = want.at(name);
      ASSERT_EQ(static_cast<size_t>(got.numel()), values.size());
      const auto* f32 = static_cast<const float*>(got.raw());
      const auto* half = static_cast<const uint16_t*>(got.raw());
      for (size_t i = 0; i < values.size(); ++i) {
        const float v = values[i].get<float>();
        if (dtype == DType::kF32) EXPECT_EQ(f32[i], v) << i;
        else if (dtype == DType::kF16) EXPECT_EQ(half[i], numpy_f32_to_f16(v)) << i;
        else EXPECT_EQ(half[i], converter_f32_to_bf16(v)) << i;
      }
    }
    fs::remove(file);
  }
}

TEST(ImportWeights, HalfFloatsRoundAsNumpyAndTheConverter) {
  // Round to nearest even: 1 + 2^-11 is halfway between 1 and the next f16, and goes to the even one (1).
  EXPECT_EQ(numpy_f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(numpy_f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(numpy_f32_to_f16(65520.0f), 0x7c00);  // rounds past 65504
  EXPECT_EQ(numpy_f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // halfway to the smallest subnormal: even
  // NaN: numpy keeps sign and payload's top bits, and keeps it a NaN
  EXPECT_EQ(numpy_f32_to_f16(std::bit_cast<float>(0x7fc00000u)), 0x7e00);
  EXPECT_EQ(numpy_f32_to_f16(std::bit_cast<float>(0xff800001u)), 0xfc01);
  EXPECT_EQ(numpy_f32_to_f16(std::bit_cast<float>(0x7fbfffffu)), 0x7dff);
  EXPECT_EQ(converter_f32_to_bf16(std::bit_cast<float>(0xffc00001u)), 0x7fc0);  // the converter's one NaN
  EXPECT_EQ(converter_f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // halfway: even
  EXPECT_EQ(converter_f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
}

}  // namespace
}  // namespace steno::nemo
