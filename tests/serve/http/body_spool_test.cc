// BodySpool: a body stays in memory up to its limit, then moves to a file that has no name in its directory and is
// gone with the spool; the bytes read back are the bytes written, whichever side of the limit they fell.
#include "serve/http/body_spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace steno::serve::http {
namespace {

namespace fs = std::filesystem;

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 997) % 26);
  return s;
}

// Open descriptors of this process that point into `dir` (deleted files included).
int open_files_in(const fs::path& dir) {
  int n = 0;
  for (const auto& fd : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(fd.path(), ec);
    if (!ec && target.string().rfind(dir.string(), 0) == 0) ++n;
  }
  return n;
}

class BodySpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("steno-spool-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(BodySpoolTest, SmallBodyStaysInMemory) {
  BodySpool spool(1 << 20, dir_.string());
  const std::string body = pattern(1000);
  spool.append(body.data(), 600);
  spool.append(body.data() + 600, 400);
  spool.finish();
  EXPECT_FALSE(spool.in_file());
  EXPECT_EQ(spool.view(), body);
  EXPECT_EQ(open_files_in(dir_), 0);
}

TEST_F(BodySpoolTest, LargeBodyGoesToAnUnnamedFileThatIsGoneWithTheSpool) {
  const std::string body = pattern((3 << 20) + 12345);
  {
    BodySpool spool(1 << 20, dir_.string());
    for (size_t at = 0; at < body.size(); at += 16384)
      spool.append(body.data() + at, std::min<size_t>(16384, body.size() - at));
    EXPECT_TRUE(spool.in_file());
    EXPECT_EQ(spool.memory(), std::string_view(body).substr(0, 1 << 20));  // the start stays for the early check
    spool.finish();
    EXPECT_EQ(spool.size(), body.size());
    EXPECT_EQ(spool.view(), body);
    EXPECT_TRUE(fs::is_empty(dir_)) << "the spool file has a name";
    EXPECT_EQ(open_files_in(dir_), 1);
    BodySpool moved = std::move(spool);  // the request moves it to the handler
    EXPECT_EQ(moved.view(), body);
  }
  EXPECT_EQ(open_files_in(dir_), 0) << "the spool file outlived the spool";
}

TEST_F(BodySpoolTest, UnwritableDirectoryIsAClearError) {
  BodySpool spool(1 << 20, (dir_ / "missing").string());
  const std::string body = pattern(2 << 20);
  try {
    spool.append(body.data(), body.size());
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("temporary file for the upload"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace steno::serve::http
