// What the checkpoint readers' tests share: a file's bytes, the Error message a read throws, a directory's entries.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "steno/core/error.h"

namespace steno::nemo::testing {

inline const std::string kPickles = std::string(STENO_TEST_DATA) + "/nemo-pickles/";

inline std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), {}};
}

// The message of the kInvalidArgument Error that read(input) throws; "" when it throws none.
template <typename Read>
std::string refusal(Read read, const std::vector<uint8_t>& input) {
  try {
    read(input);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

// The entries of `dir` (none when it does not exist), in no particular order.
inline std::vector<std::filesystem::path> entries(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

}  // namespace steno::nemo::testing
