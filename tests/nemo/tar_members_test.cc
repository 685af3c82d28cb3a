// A .nemo read in place (tar_members.h, then checkpoint.h): the reference .nemo's members as Python's tarfile
// lists them, and its model_weights.ckpt's tensors as Python's unpickler reads its pickle; tar archives that must
// not be trusted refused with the reason: a parent-folder name, an absolute name, a link, a wrong checksum, a size
// past the end, truncation.
#include "steno/nemo/tar_members.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "nemo_test_util.h"
#include "steno/core/error.h"
#include "steno/nemo/checkpoint.h"

namespace steno::nemo {
namespace {

using testing::bytes_of;

std::string tar_refusal(const std::vector<uint8_t>& tar) { return testing::refusal(read_tar, tar); }

TEST(TarMembers, TheReferenceNemoFileReadInPlaceDownToItsTensors) {
  const std::vector<uint8_t> nemo = bytes_of(std::string(STENO_TEST_DATA) + "/nemo-tiny/model.nemo");
  const std::vector<TarMember> members = read_tar(nemo);
  // As Python's tarfile lists them (the "." folder skipped).
  const std::vector<std::pair<std::string, size_t>> want = {
      {"25ba4759f64745faa9be42a87e654f2b_vocab.txt", 513},
      {"2e1e1d49b8be48159b81925257a7f8d3_tokenizer.model", 239186},
      {"8cfa98aa85ee4a629e866975ba22bba7_tokenizer.vocab", 959},
      {"model_config.yaml", 5110},
      {"model_weights.ckpt", 2764150}};
  ASSERT_EQ(members.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(members[k].name, want[k].first);
    EXPECT_EQ(members[k].data.size(), want[k].second);
  }
  EXPECT_TRUE(std::string(members[3].data.begin(), members[3].data.end()).find("encoder") != std::string::npos);
  const std::vector<CheckpointTensor> tensors = read_checkpoint(members[4].data);
  std::ifstream in(testing::kPickles + "nemo-tiny.json");
  const nlohmann::json pickled = nlohmann::json::parse(in);
  ASSERT_EQ(tensors.size(), pickled.size());
  for (size_t k = 0; k < tensors.size(); ++k) EXPECT_EQ(tensors[k].ref.name, pickled[k]["name"]);
}

// Long names as Python's tarfile writes them (fuzz/seeds/tar_members, also the fuzzer's seeds): GNU's 'L' member and
// pax's path record; a folder is skipped.
TEST(TarMembers, LongNamesOfGnuAndPax) {
  const std::string seeds = std::string(STENO_SOURCE_DIR) + "/fuzz/seeds/tar_members/";
  const std::vector<uint8_t> gnu = bytes_of(seeds + "gnu-long.tar"), pax = bytes_of(seeds + "pax.tar"),
                             ustar = bytes_of(seeds + "ustar.tar");
  const std::vector<TarMember> g = read_tar(gnu), p = read_tar(pax), u = read_tar(ustar);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].name, std::string(120, 'x') + "/tokenizer.model");
  EXPECT_EQ(std::string(g[0].data.begin(), g[0].data.end()), "data of " + g[0].name);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].name, std::string(150, 'y') + ".vocab");
  EXPECT_EQ(p[1].name, "short");
  ASSERT_EQ(u.size(), 2u);
  EXPECT_EQ(u[0].name, "model_config.yaml");
  EXPECT_EQ(u[1].name, "model_weights.ckpt");
}

// A one-member ustar archive written here: header (with its checksum), data, end blocks.
std::vector<uint8_t> tar_of(const std::string& name, char type, const std::string& data,
                            const std::string& link = "") {
  std::vector<uint8_t> t(512, 0);
  std::memcpy(t.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(reinterpret_cast<char*>(&t[100]), 8, "%07o", 0644);
  std::snprintf(reinterpret_cast<char*>(&t[124]), 12, "%011o", static_cast<unsigned>(data.size()));
  t[156] = static_cast<uint8_t>(type);
  std::memcpy(&t[157], link.data(), std::min<size_t>(link.size(), 100));
  std::memcpy(&t[257], "ustar", 6);
  std::memset(&t[148], ' ', 8);
  unsigned sum = 0;
  for (uint8_t b : t) sum += b;
  std::snprintf(reinterpret_cast<char*>(&t[148]), 8, "%06o", sum);
  t.insert(t.end(), data.begin(), data.end());
  t.resize((t.size() + 511) / 512 * 512 + 1024, 0);
  return t;
}

TEST(TarMembers, ArchivesThatMustNotBeTrustedAreRefused) {
  const std::vector<TarMember> fine = read_tar(tar_of("./dir/file.txt", '0', "hello"));
  ASSERT_EQ(fine.size(), 1u);
  EXPECT_EQ(fine[0].name, "dir/file.txt");
  EXPECT_EQ(std::string(fine[0].data.begin(), fine[0].data.end()), "hello");

  EXPECT_NE(tar_refusal(tar_of("../etc/passwd", '0', "x")).find("names a parent folder"), std::string::npos);
  EXPECT_NE(tar_refusal(tar_of("a/../../b", '0', "x")).find("names a parent folder"), std::string::npos);
  EXPECT_NE(tar_refusal(tar_of("/etc/passwd", '0', "x")).find("absolute name"), std::string::npos);
  EXPECT_NE(tar_refusal(tar_of("model_weights.ckpt", '2', "", "/etc/shadow")).find("symbolic link: refused"),
            std::string::npos);
  EXPECT_NE(tar_refusal(tar_of("x", '1', "", "y")).find("hard link"), std::string::npos);
  EXPECT_NE(tar_refusal(tar_of("dev", '3', "")).find("of type '3'"), std::string::npos);

  std::vector<uint8_t> sum = tar_of("file", '0', "abc");
  sum[0] = 'F';  // the name changes, the checksum does not
  EXPECT_NE(tar_refusal(sum).find("checksum is wrong"), std::string::npos);

  std::vector<uint8_t> huge = tar_of("big", '0', "");
  std::snprintf(reinterpret_cast<char*>(&huge[124]), 12, "%011lo", 077777777777ul);  // 8 GiB declared in 1.5 kB
  std::memset(&huge[148], ' ', 8);
  unsigned s = 0;
  for (size_t k = 0; k < 512; ++k) s += huge[k];
  std::snprintf(reinterpret_cast<char*>(&huge[148]), 8, "%06o", s);
  EXPECT_NE(tar_refusal(huge).find("only 1024 follow"), std::string::npos) << tar_refusal(huge);

  const std::vector<uint8_t> whole = tar_of("file", '0', std::string(700, 'z'));
  for (size_t n : {0u, 100u, 511u, 600u, 1023u})
    EXPECT_FALSE(tar_refusal({whole.begin(), whole.begin() + static_cast<ptrdiff_t>(n)}).empty()) << n;
}

}  // namespace
}  // namespace steno::nemo
