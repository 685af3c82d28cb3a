// The checkpoint's ZIP archive read in place (stored_zip.h) and joined to its pickle (checkpoint.h): a torch.save
// checkpoint's every tensor equal to torch's own reading (tests/data/nemo-pickles/made-values.json), and damaged
// archives refused with the reason: truncation, a flipped byte (CRC-32), a compressed entry, a missing storage.
#include "steno/nemo/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nemo_test_util.h"
#include "steno/core/dtype.h"
#include "steno/core/error.h"
#include "steno/nemo/stored_zip.h"

namespace steno::nemo {
namespace {

using testing::bytes_of;
using testing::kPickles;

std::string checkpoint_refusal(const std::vector<uint8_t>& archive) {
  return testing::refusal([](const std::vector<uint8_t>& a) { read_checkpoint(a); }, archive);
}

// Element `flat` (row-major over the shape) of a tensor, through its offset and strides, as a double.
double element(const CheckpointTensor& t, int64_t flat) {
  int64_t at = t.ref.offset;
  for (size_t k = t.ref.shape.size(); k-- > 0;) {
    at += (flat % t.ref.shape[k]) * t.ref.stride[k];
    flat /= t.ref.shape[k];
  }
  const uint8_t* p = t.storage.data() + at * torch_type_size(t.ref.type);
  const auto as = [p](auto v) {
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t.ref.type) {
    case TorchType::kF64: return as(double{});
    case TorchType::kF32: return as(float{});
    case TorchType::kF16: return f16_to_f32(as(uint16_t{}));
    case TorchType::kBF16: return bf16_to_f32(as(uint16_t{}));
    case TorchType::kI64: return static_cast<double>(as(int64_t{}));
    case TorchType::kI32: return as(int32_t{});
    default: ADD_FAILURE() << "no such type in the fixture"; return 0;
  }
}

TEST(Checkpoint, EveryTensorOfATorchSaveCheckpointAsTorchReadsIt) {
  const std::vector<uint8_t> archive = bytes_of(kPickles + "made.ckpt");
  const std::vector<CheckpointTensor> tensors = read_checkpoint(archive);
  std::ifstream in(kPickles + "made-values.json");
  const nlohmann::json want = nlohmann::json::parse(in);
  ASSERT_EQ(tensors.size(), want.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    const CheckpointTensor& t = tensors[k];
    SCOPED_TRACE(t.ref.name);
    ASSERT_EQ(t.ref.name, want[k]["name"]);
    int64_t n = 1;
    for (int64_t d : t.ref.shape) n *= d;
    const auto& values = want[k]["values"];
    ASSERT_EQ(static_cast<size_t>(n), values.size());
    for (int64_t i = 0; i < n; ++i) {
      // torch wrote each value as the f32 its dtype converts to (f64: rounded to f32 there too).
      EXPECT_EQ(static_cast<float>(element(t, i)), values[static_cast<size_t>(i)].get<float>()) << "element " << i;
    }
  }
}

TEST(Checkpoint, ATruncatedArchiveIsRefused) {
  const std::vector<uint8_t> whole = bytes_of(kPickles + "made.ckpt");
  for (size_t n = 0; n < whole.size(); n += 37) {
    const std::string why = checkpoint_refusal({whole.begin(), whole.begin() + static_cast<ptrdiff_t>(n)});
    EXPECT_NE(why.find("checkpoint archive"), std::string::npos) << "cut to " << n << " bytes: " << why;
  }
}

// The central directory's entry for `name`: its offset in the archive.
size_t central_entry(const std::vector<uint8_t>& z, const std::string& name) {
  for (size_t at = 0; at + 46 < z.size(); ++at)
    if (z[at] == 0x50 && z[at + 1] == 0x4b && z[at + 2] == 0x01 && z[at + 3] == 0x02) {
      const size_t len = z[at + 28] | (z[at + 29] << 8);
      if (std::string(z.begin() + static_cast<ptrdiff_t>(at + 46), z.begin() + static_cast<ptrdiff_t>(at + 46 + len)) ==
          name)
        return at;
    }
  ADD_FAILURE() << "no central entry " << name;
  return 0;
}

TEST(Checkpoint, DamageIsRefusedWithItsReason) {
  const std::vector<uint8_t> whole = bytes_of(kPickles + "made.ckpt");
  const std::vector<ZipEntry> entries = read_stored_zip(whole);
  const ZipEntry* storage = nullptr;
  for (const ZipEntry& e : entries)
    if (e.name.ends_with("/data/0")) storage = &e;
  ASSERT_NE(storage, nullptr);
  const std::string name = storage->name;

  std::vector<uint8_t> flipped = whole;
  flipped[static_cast<size_t>(storage->data.data() - whole.data())] ^= 0x40;
  EXPECT_NE(checkpoint_refusal(flipped).find("entry '" + name + "' is corrupt: CRC-32"), std::string::npos)
      << checkpoint_refusal(flipped);
  EXPECT_EQ(read_stored_zip(flipped, false).size(), entries.size()) << "without the CRC check it reads";

  std::vector<uint8_t> deflated = whole;
  deflated[central_entry(deflated, name) + 10] = 8;  // method: deflate
  EXPECT_NE(checkpoint_refusal(deflated).find("is compressed (method 8)"), std::string::npos)
      << checkpoint_refusal(deflated);

  std::vector<uint8_t> renamed = whole;
  renamed[central_entry(renamed, name) + 46 + name.size() - 1] = 'X';  // .../data/0 -> .../data/X
  EXPECT_NE(checkpoint_refusal(renamed).find("lives in storage '0', which it lacks"), std::string::npos)
      << checkpoint_refusal(renamed);

  EXPECT_NE(checkpoint_refusal(std::vector<uint8_t>(100, 0)).find("no end-of-central-directory record"),
            std::string::npos);
}

}  // namespace
}  // namespace steno::nemo
