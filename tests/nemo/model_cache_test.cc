// The model cache (steno/nemo/model_cache.h) and `--model X.nemo`: a checkpoint given where a model directory is
// taken is imported once into <cache>/models/<sha256>/<name> and reused; it transcribes exactly as the directory
// tools/convert_nemo.py makes of it (prepare_nemo_import.sh); two processes at once share one import; a corrupt
// checkpoint is refused with its name and leaves nothing in the cache.
#include "steno/nemo/model_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../cli_util.h"
#include "nemo/sha256.h"
#include "nemo_test_util.h"

namespace steno::nemo::testing {
namespace {

namespace fs = std::filesystem;
using steno::testing::run;
using steno::testing::slurp;

const fs::path kNemo = fs::path(STENO_TEST_DATA) / "nemo-tiny/model.nemo";
const fs::path kConvertedAuto = fs::path(STENO_BINARY_DIR) / "testdata/nemo-import/nemo-tiny-auto";
const fs::path kDiarNemo = fs::path(STENO_TEST_DATA) / "sortformer-tiny/model.nemo";
const fs::path kConvertedDiar = fs::path(STENO_BINARY_DIR) / "testdata/nemo-import/sortformer-tiny";
const std::string kSteno = STENO_BINARY;

std::string clips() {
  const fs::path data = fs::path(STENO_TEST_DATA) / "nemo-tiny";
  std::string out;
  for (const char* clip : {"clip0_1.7s.wav", "clip1_4.3s.wav", "clip2_9.0s.wav"})
    out += fmt::format(" {}", (data / clip).string());
  return out;
}

class ModelCache : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("steno_model_cache_test_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
    cache_ = tmp_ / "cache";
  }
  void TearDown() override { fs::remove_all(tmp_); }

  // Runs steno with this test's cache; stdout and stderr apart.
  std::string steno(const std::string& args, int* code, std::string* err = nullptr) {
    const fs::path err_file = tmp_ / "stderr.txt";
    const std::string out =
        run(fmt::format("(STENO_CACHE_DIR={} {} {} 2>{})", cache_.string(), kSteno, args, err_file.string()), code);
    if (err) *err = slurp(err_file);
    return out;
  }

  fs::path tmp_, cache_;
};

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(ModelCache, RootFromTheEnvironment) {
  const char* saved[] = {std::getenv("STENO_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"), std::getenv("HOME")};
  const std::string keep[] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "", saved[2] ? saved[2] : ""};
  ::setenv("STENO_CACHE_DIR", "/a/steno-cache", 1);
  ::setenv("XDG_CACHE_HOME", "/b/xdg", 1);
  ::setenv("HOME", "/c/home", 1);
  EXPECT_EQ(cache_root(), fs::path("/a/steno-cache"));
  ::setenv("STENO_CACHE_DIR", "", 1);
  EXPECT_EQ(cache_root(), fs::path("/b/xdg/steno"));
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(cache_root(), fs::path("/c/home/.cache/steno"));
  const char* names[] = {"STENO_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i) {
    if (saved[i])
      ::setenv(names[i], keep[i].c_str(), 1);
    else
      ::unsetenv(names[i]);
  }
}

// The library: keyed by the file's SHA-256 (as sha256sum computes it), imported once, listed.
TEST_F(ModelCache, ImportsOnceUnderItsHash) {
  int code = -1;
  const std::string sum = run(fmt::format("sha256sum {}", kNemo.string()), &code);
  ASSERT_EQ(code, 0) << sum;
  const std::string sha = sum.substr(0, 64);
  EXPECT_EQ(sha256_of_file(kNemo), sha);

  std::vector<std::string> lines;
  const CachedModel first = cached_model(kNemo, cache_, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_TRUE(first.imported);
  EXPECT_EQ(first.sha256, sha);
  EXPECT_EQ(first.dir, cache_ / "models" / sha / "model");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "importing model.nemo into the cache (first use) ...");
  EXPECT_TRUE(fs::is_regular_file(first.dir / "model.safetensors"));

  lines.clear();
  const CachedModel again = cached_model(kNemo, cache_, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_FALSE(again.imported);
  EXPECT_EQ(again.dir, first.dir);
  EXPECT_TRUE(lines.empty());

  const std::vector<CacheEntry> listed = list_cached_models(cache_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].sha256, sha);
  EXPECT_EQ(listed[0].name, "model");
  EXPECT_EQ(listed[0].model_type, "fastconformer_tdt");
  EXPECT_EQ(listed[0].source, fs::absolute(kNemo).string());
  EXPECT_GT(listed[0].bytes, fs::file_size(first.dir / "model.safetensors"));
  EXPECT_EQ(find_cached_model(cache_, sha), first.dir);
  EXPECT_TRUE(find_cached_model(cache_, std::string(64, '0')).empty());
}

// `steno transcribe --model X.nemo` prints what `--model <the converter's directory>` prints; the second run takes
// the cached directory as it is (same inode and mtime, no import line).
TEST_F(ModelCache, TranscribeFromANemoFile) {
  int code = -1;
  std::string err;
  const std::string want = steno(fmt::format("transcribe --model {}{}", kConvertedAuto.string(), clips()), &code, &err);
  ASSERT_EQ(code, 0) << err;
  ASSERT_FALSE(want.empty());

  const std::string from_nemo = fmt::format("transcribe --model {}{}", kNemo.string(), clips());
  std::string got = steno(from_nemo, &code, &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(got, want);
  EXPECT_EQ(count(err, "importing model.nemo into the cache (first use) ..."), 1u) << err;
  const std::vector<fs::path> models = entries(cache_ / "models");
  ASSERT_EQ(models.size(), 1u);
  const fs::path dir = models[0] / "model";
  struct stat before {};
  ASSERT_EQ(::stat(dir.c_str(), &before), 0);

  got = steno(from_nemo, &code, &err);
  ASSERT_EQ(code, 0) << err;
  EXPECT_EQ(got, want);
  EXPECT_EQ(count(err, "importing"), 0u) << err;
  struct stat after {};
  ASSERT_EQ(::stat(dir.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  EXPECT_EQ(entries(cache_ / "models").size(), 1u);

  // `steno model info` and `steno model list` see the same entry.
  const std::string info = steno(fmt::format("model info {}", kNemo.string()), &code, &err);
  EXPECT_EQ(code, 0) << err;
  EXPECT_FALSE(info.empty());
  EXPECT_EQ(info, steno(fmt::format("model info {}", dir.string()), &code));
}

// `steno diarize --diarizer X.nemo` gives the RTTM of the converter's directory.
TEST_F(ModelCache, DiarizeFromANemoFile) {
  const std::string audio = (fs::path(STENO_TEST_DATA) / "diar-testset/conv04.flac").string();
  int code = -1;
  std::string err;
  const std::string want = steno(fmt::format("diarize --diarizer {} {}", kConvertedDiar.string(), audio), &code, &err);
  ASSERT_EQ(code, 0) << err;
  ASSERT_NE(want.find("SPEAKER conv04"), std::string::npos) << want;
  EXPECT_EQ(steno(fmt::format("diarize --diarizer {} {}", kDiarNemo.string(), audio), &code, &err), want);
  EXPECT_EQ(code, 0) << err;
  EXPECT_EQ(count(err, "importing model.nemo into the cache (first use)"), 1u) << err;
  const std::vector<CacheEntry> listed = list_cached_models(cache_);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].model_type, "sortformer");
}

// The hash memo follows the file: rewritten in place (same size, later mtime), it is hashed again.
TEST_F(ModelCache, ARewrittenFileIsHashedAgain) {
  const fs::path copy = tmp_ / "rewritten.nemo";
  fs::copy_file(kNemo, copy);
  const CachedModel first = cached_model(copy, cache_);
  EXPECT_TRUE(first.imported);
  EXPECT_EQ(cached_model(copy, cache_).dir, first.dir);

  std::vector<uint8_t> bytes = bytes_of(copy.string());
  bytes[bytes.size() / 2] ^= 0xff;
  std::ofstream(copy, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  fs::last_write_time(copy, fs::last_write_time(copy) + std::chrono::seconds(2));  // past the clock's granularity
  try {
    cached_model(copy, cache_);
    ADD_FAILURE() << "the corrupted copy was taken for the cached model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  EXPECT_EQ(list_cached_models(cache_).size(), 1u);

  int code = -1;
  std::string err;
  steno("transcribe --model /nonexistent/missing.nemo x.wav", &code, &err);
  EXPECT_EQ(code, 1);
  EXPECT_NE(err.find("/nonexistent/missing.nemo: no such .nemo file"), std::string::npos) << err;
}

// Two processes given the same new checkpoint at once: both succeed with the same directory, imported once.
TEST_F(ModelCache, TwoProcessesAtOnce) {
  const std::string one = fmt::format("STENO_CACHE_DIR={} {} model info {}", cache_.string(), kSteno, kNemo.string());
  const fs::path a = tmp_ / "a", b = tmp_ / "b";
  int code = -1;
  const std::string log =
      run(fmt::format("sh -c '{0} >{1}.out 2>{1}.err & p=$!; {0} >{2}.out 2>{2}.err; r=$?; wait $p && exit $r'", one,
                      a.string(), b.string()),
          &code);
  const std::string out_a = slurp(a.string() + ".out"), out_b = slurp(b.string() + ".out");
  const std::string err = slurp(a.string() + ".err") + slurp(b.string() + ".err");
  EXPECT_EQ(code, 0) << log << err;
  EXPECT_EQ(count(err, "importing model.nemo into the cache"), 1u) << err;
  EXPECT_FALSE(out_a.empty());
  EXPECT_EQ(out_a, out_b);
  const std::vector<fs::path> models = entries(cache_ / "models");
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(entries(models[0]).size(), 2u);  // the model and source.json: no staging directory left behind
  EXPECT_TRUE(fs::is_regular_file(models[0] / "model" / "model.safetensors"));
}

// A checkpoint with a flipped byte: a clear error naming the file, exit 1, nothing under models/.
TEST_F(ModelCache, CorruptCheckpointLeavesNoEntry) {
  std::vector<uint8_t> bytes = bytes_of(kNemo.string());
  ASSERT_GT(bytes.size(), 1000u);
  bytes[bytes.size() / 2] ^= 0xff;  // inside a tensor's storage: its CRC-32 no longer matches
  const fs::path bad = tmp_ / "broken.nemo";
  std::ofstream(bad, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());

  int code = -1;
  std::string err;
  steno(fmt::format("transcribe --model {}{}", bad.string(), clips()), &code, &err);
  EXPECT_EQ(code, 1) << err;
  EXPECT_NE(err.find(fmt::format("{}: cannot import: ", bad.string())), std::string::npos) << err;
  EXPECT_NE(err.find("corrupt"), std::string::npos) << err;
  EXPECT_TRUE(entries(cache_ / "models").empty());
  EXPECT_TRUE(list_cached_models(cache_).empty());
}

}  // namespace
}  // namespace steno::nemo::testing
