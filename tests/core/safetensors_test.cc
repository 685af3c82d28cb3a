#include "steno/core/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace steno {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SafeTensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("steno_safetensors_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A file made of a length prefix, a header and data bytes, each given verbatim.
  fs::path raw_file(const std::string& header, const std::string& data = "", uint64_t len = UINT64_MAX) {
    if (len == UINT64_MAX) len = header.size();
    const fs::path p = dir_ / "raw.safetensors";
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << header << data;
    return p;
  }

  // Opening `p` must throw steno::Error with `code` and a message containing `text`.
  static void expect_open_error(const fs::path& p, ErrorCode code, const std::string& text) {
    try {
      SafeTensorsFile::open(p);
      ADD_FAILURE() << "opened a corrupt file; expected: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_THAT(e.what(), HasSubstr(text));
    }
  }

  fs::path dir_;
};

Tensor iota_tensor(DType dtype, const Shape& shape) {
  Tensor t = Tensor::empty(shape, dtype);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i) * 0.5f - 3.0f;
    switch (dtype) {
      case DType::kF32: t.data<float>()[i] = v; break;
      case DType::kF16: static_cast<uint16_t*>(t.raw())[i] = f32_to_f16(v); break;
      case DType::kBF16: static_cast<uint16_t*>(t.raw())[i] = f32_to_bf16(v); break;
      case DType::kI32: t.data<int32_t>()[i] = static_cast<int32_t>(i) - 7; break;
      case DType::kI64: t.data<int64_t>()[i] = (int64_t(1) << 40) + i; break;
      case DType::kU8: t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 37); break;
    }
  }
  return t;
}

TEST_F(SafeTensorsTest, RoundTripAllDtypes) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"u8", iota_tensor(DType::kU8, {3, 5})},       // odd sizes: the writer must keep later tensors aligned
      {"f16", iota_tensor(DType::kF16, {7})},
      {"bf16", iota_tensor(DType::kBF16, {2, 3, 1})},
      {"f32", iota_tensor(DType::kF32, {4, 3})},
      {"i32", iota_tensor(DType::kI32, {5})},
      {"i64", iota_tensor(DType::kI64, {2, 2})},
      {"scalar", iota_tensor(DType::kF32, {})},
      {"empty", Tensor::zeros({0, 4})},
  };
  const fs::path p = dir_ / "all.safetensors";
  write_safetensors(p, tensors, {{"format", "pt"}, {"who", "steno"}});
  EXPECT_FALSE(fs::exists(p.string() + ".tmp" + std::to_string(::getpid())));

  Tensor kept;
  {
    SafeTensorsFile f = SafeTensorsFile::open(p);
    EXPECT_EQ(f.names().size(), tensors.size());
    EXPECT_EQ(f.metadata().at("format"), "pt");
    EXPECT_EQ(f.metadata().at("who"), "steno");
    EXPECT_EQ(f.file_size(), fs::file_size(p));
    for (const auto& [name, want] : tensors) {
      ASSERT_TRUE(f.has(name)) << name;
      EXPECT_EQ(f.info(name).dtype, want.dtype()) << name;
      EXPECT_EQ(f.info(name).shape, want.shape()) << name;
      Tensor got = f.get(name);
      EXPECT_EQ(got.dtype(), want.dtype());
      EXPECT_EQ(got.shape(), want.shape());
      EXPECT_EQ(reinterpret_cast<uintptr_t>(got.raw()) % dtype_size(got.dtype()), 0u) << name << " misaligned";
      ASSERT_EQ(got.nbytes(), want.nbytes());
      if (want.nbytes() > 0) {
        EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << name;
      }
    }
    EXPECT_FALSE(f.has("nope"));
    EXPECT_THROW(f.info("nope"), Error);
    try {
      f.get("nope");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_THAT(e.what(), HasSubstr("nope"));
    }
    kept = f.get("f32");
  }
  // The view outlives the file object (and the file itself): the mapping is shared.
  fs::remove(p);
  EXPECT_EQ(kept.to_vector(), tensors[3].second.to_vector());
}

TEST_F(SafeTensorsTest, NamesAreInByteOrderAndHeaderIsAligned) {
  const fs::path p = dir_ / "order.safetensors";
  write_safetensors(p, {{"b", Tensor::zeros({3}, DType::kU8)}, {"a", Tensor::zeros({2})}, {"c", Tensor::zeros({1})}});
  SafeTensorsFile f = SafeTensorsFile::open(p);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"a", "c", "b"}));
  std::ifstream in(p, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(f.info("a").begin, 0u);
  EXPECT_EQ(f.info("c").begin, 8u);
  EXPECT_EQ(f.info("b").begin, 12u);
  EXPECT_EQ(f.file_size(), 8 + n + 15);
}

TEST_F(SafeTensorsTest, ReadsForeignLayoutWithGapsAndMisalignment) {
  // A hand-made header: unpadded (odd length), a gap between tensors, unsorted entries.
  float vals[2] = {1.5f, -2.0f};
  std::string data(3, '\0');
  data.append(reinterpret_cast<const char*>(vals), 8);
  const std::string header =
      R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},"__metadata__":null,"z":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  SafeTensorsFile f = SafeTensorsFile::open(raw_file(header, data));
  EXPECT_EQ(f.names(), (std::vector<std::string>{"z", "x"}));
  Tensor x = f.get("x");  // misaligned in the file: returned as an aligned copy
  EXPECT_EQ(reinterpret_cast<uintptr_t>(x.raw()) % 4, 0u);
  EXPECT_EQ(x.to_vector(), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_TRUE(f.metadata().empty());
}

TEST_F(SafeTensorsTest, MissingFileAndDirectory) {
  try {
    SafeTensorsFile::open(dir_ / "absent.safetensors");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("absent.safetensors"));
  }
  EXPECT_THROW(SafeTensorsFile::open(dir_), Error);
}

TEST_F(SafeTensorsTest, CorruptFiles) {
  const std::string ok = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string eight(8, '\0');
  {  // shorter than the length prefix
    const fs::path p = dir_ / "short.safetensors";
    std::ofstream(p, std::ios::binary) << "abc";
    expect_open_error(p, ErrorCode::kDataLoss, "too short");
    std::ofstream(p, std::ios::binary | std::ios::trunc);
    expect_open_error(p, ErrorCode::kDataLoss, "too short");
  }
  expect_open_error(raw_file(ok, eight, uint64_t(1) << 62), ErrorCode::kDataLoss, "exceeds the limit");
  expect_open_error(raw_file(ok, eight, UINT64_MAX - 1), ErrorCode::kDataLoss, "exceeds the limit");
  expect_open_error(raw_file(ok, eight, ok.size() + 9), ErrorCode::kDataLoss, "exceeds the file size");
  expect_open_error(raw_file(ok.substr(0, 20), "", 20), ErrorCode::kDataLoss, "not valid JSON");
  expect_open_error(raw_file("", eight), ErrorCode::kDataLoss, "does not start with a JSON object");
  expect_open_error(raw_file("[1,2]", eight), ErrorCode::kDataLoss, "does not start with a JSON object");
  expect_open_error(raw_file("{\"t\":[1,2]}"), ErrorCode::kDataLoss, "entry is not a JSON object");
  expect_open_error(raw_file("{} trailing"), ErrorCode::kDataLoss, "not valid JSON");
  expect_open_error(raw_file("{\"a\xff\":1}"), ErrorCode::kDataLoss, "not valid JSON");
  expect_open_error(raw_file(std::string(100, '{') + std::string(100, '}')), ErrorCode::kDataLoss,
                    "nested too deeply");
  // Entry fields.
  expect_open_error(raw_file(R"({"t":{"shape":[2],"data_offsets":[0,8]}})", eight), ErrorCode::kDataLoss, "dtype");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","data_offsets":[0,8]}})", eight), ErrorCode::kDataLoss, "shape");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2]}})", eight), ErrorCode::kDataLoss, "data_offsets");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight), ErrorCode::kDataLoss,
                    "data_offsets");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
                    ErrorCode::kDataLoss, "non-negative integer");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", eight),
                    ErrorCode::kDataLoss, "non-negative integer");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}})", eight),
                    ErrorCode::kDataLoss, "non-negative integer");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,-8]}})", eight),
                    ErrorCode::kDataLoss, "non-negative integer");
  // Dtypes.
  expect_open_error(raw_file(R"({"t":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", eight), ErrorCode::kDataLoss,
                    "unknown dtype 'Q7'");
  expect_open_error(raw_file(R"({"t":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", eight),
                    ErrorCode::kUnimplemented, "F64");
  // Offsets and sizes.
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "1234"),
                    ErrorCode::kDataLoss, "outside the 4-byte data section");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", eight),
                    ErrorCode::kDataLoss, "outside");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight), ErrorCode::kDataLoss,
                    "reversed");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
                    ErrorCode::kDataLoss, "needs 12");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551615]}})", eight),
                    ErrorCode::kDataLoss, "outside");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],)"
                             R"("data_offsets":[0,8]}})",
                             eight),
                    ErrorCode::kDataLoss, "overflows");
  expect_open_error(raw_file(R"({"t":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]}})", eight),
                    ErrorCode::kDataLoss, "overflows");
  expect_open_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                             R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             eight),
                    ErrorCode::kDataLoss, "overlap");
  // Metadata.
  expect_open_error(raw_file(R"({"__metadata__":{"k":1}})"), ErrorCode::kDataLoss, "not a string");
  expect_open_error(raw_file(R"({"__metadata__":[1]})"), ErrorCode::kDataLoss, "__metadata__");
}

TEST_F(SafeTensorsTest, EveryTruncationAndByteFlipIsAnErrorNotACrash) {
  const fs::path good = dir_ / "good.safetensors";
  write_safetensors(good, {{"a", iota_tensor(DType::kF32, {3, 2})}, {"b", iota_tensor(DType::kBF16, {5})}},
                    {{"k", "v"}});
  std::string bytes;
  {
    std::ifstream in(good, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const fs::path p = dir_ / "mutant.safetensors";
  auto write = [&](const std::string& b) { std::ofstream(p, std::ios::binary | std::ios::trunc) << b; };
  for (size_t n = 0; n < bytes.size(); ++n) {
    write(bytes.substr(0, n));
    EXPECT_THROW(SafeTensorsFile::open(p), Error) << "truncated to " << n << " bytes";
  }
  std::mt19937 rng(7);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  for (int i = 0; i < 2000; ++i) {
    std::string b = bytes;
    const size_t pos = rng() % (8 + header_len);
    b[pos] = static_cast<char>(rng() & 0xff);
    write(b);
    try {
      SafeTensorsFile f = SafeTensorsFile::open(p);
      for (const std::string& name : f.names()) f.get(name).clone();  // whatever opens must be readable
    } catch (const Error&) {
    }
  }
}

TEST_F(SafeTensorsTest, WriterRejectsBadInput) {
  EXPECT_THROW(write_safetensors(dir_ / "x.safetensors", {{"a", Tensor::zeros({1})}, {"a", Tensor::zeros({1})}}),
               Error);
  EXPECT_THROW(write_safetensors(dir_ / "x.safetensors", {{"__metadata__", Tensor::zeros({1})}}), Error);
  EXPECT_THROW(write_safetensors(dir_ / "x.safetensors", {{"a", Tensor()}}), Error);
  try {
    write_safetensors(dir_ / "no_such_dir" / "x.safetensors", {{"a", Tensor::zeros({1})}});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
  // The streaming writer checks what the producer returns, and leaves no partial file behind.
  const fs::path p = dir_ / "s.safetensors";
  EXPECT_THROW(write_safetensors_streamed(p, {{"a", DType::kF32, {2}}}, {},
                                          [](size_t) { return Tensor::zeros({3}); }),
               Error);
  EXPECT_FALSE(fs::exists(p));
  EXPECT_TRUE(fs::is_empty(dir_));
}

}  // namespace
}  // namespace steno
