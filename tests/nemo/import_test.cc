// `steno model import` makes what tools/convert_nemo.py makes, byte for byte: config.json, model.safetensors and
// tokenizer.model of the committed NeMo references, for both model types, both front ends, each dtype and a
// post-processing yaml. The converter's outputs are made at test time (prepare_nemo_import.sh).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "../cli_util.h"
#include "nemo_test_util.h"
#include "steno/nemo/import.h"

namespace steno::nemo::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kConverted = fs::path(STENO_BINARY_DIR) / "testdata/nemo-import";
const fs::path kAsr = fs::path(STENO_TEST_DATA) / "nemo-tiny/model.nemo";
const fs::path kDiar = fs::path(STENO_TEST_DATA) / "sortformer-tiny/model.nemo";
const fs::path kCallhome = fs::path(STENO_SOURCE_DIR) / "tests/diar/sortformer_diar_4spk-v1_callhome-part1.yaml";

struct Case {
  std::string dir;  // the converter's output under kConverted
  fs::path nemo;
  ImportOptions options;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.dir; }

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// The first byte where two files differ, for a message that says where (sizes differ: the shorter one's size).
std::string first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return "first difference at byte " + std::to_string(k) + " (sizes " + std::to_string(a.size()) + ", " +
         std::to_string(b.size()) + ")";
}

void expect_same_directory(const fs::path& got, const fs::path& want) {
  const std::set<std::string> names = files_in(want);
  EXPECT_EQ(files_in(got), names);
  EXPECT_TRUE(names.count("config.json") && names.count("model.safetensors"));
  for (const std::string& name : names) {
    const std::vector<uint8_t> a = bytes_of((got / name).string()), b = bytes_of((want / name).string());
    EXPECT_TRUE(a == b) << name << ": " << first_difference(a, b);
  }
}

class ImportMatchesConverter : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("steno_import_test_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  fs::path tmp_;
};

TEST_P(ImportMatchesConverter, ByteForByte) {
  const Case& c = GetParam();
  const fs::path out = tmp_ / c.dir / "model";  // its parent made on the way, as the converter makes it
  const ImportResult r = import_nemo(c.nemo, out, c.options);
  expect_same_directory(out, kConverted / c.dir);
  EXPECT_EQ(r.model_type, c.nemo == kDiar ? "sortformer" : "fastconformer_tdt");
  EXPECT_FALSE(r.summary.empty());
  // Nothing is left beside the model: the staging directory was renamed into place.
  EXPECT_EQ(files_in(tmp_ / c.dir), std::set<std::string>{"model"});
}

ImportOptions options(std::optional<std::string> fv, std::string dtype = "f32",
                      std::optional<fs::path> post = std::nullopt) {
  ImportOptions o;
  o.frontend_version = std::move(fv);
  o.dtype = std::move(dtype);
  o.postprocessing = std::move(post);
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    References, ImportMatchesConverter,
    ::testing::Values(Case{"nemo-tiny-24", kAsr, options("2.4")}, Case{"nemo-tiny-25", kAsr, options("2.5")},
                      Case{"nemo-tiny-auto", kAsr, options(std::nullopt)},
                      Case{"nemo-tiny-f16", kAsr, options(std::nullopt, "f16")},
                      Case{"sortformer-tiny", kDiar, options(std::nullopt)},
                      Case{"sortformer-tiny-callhome", kDiar, options(std::nullopt, "f32", kCallhome)},
                      Case{"sortformer-tiny-bf16", kDiar, options(std::nullopt, "bf16")}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.dir;
      for (char& c : name)
        if (c == '-') c = '_';
      return name;
    });

// The command as a user runs it: exit status 0, the same files; a failure exits 1 with a message and leaves no
// directory.
TEST_F(ImportMatchesConverter, CommandLine) {
  const fs::path out = tmp_ / "cli";
  int code = -1;
  std::string log = steno::testing::run(std::string(STENO_BINARY) + " model import " + kAsr.string() + " --out " +
                                            out.string() + " --frontend-version 2.4", &code);
  EXPECT_EQ(code, 0) << log;
  EXPECT_NE(log.find("fastconformer_tdt"), std::string::npos) << log;
  expect_same_directory(out, kConverted / "nemo-tiny-24");

  const fs::path bad = tmp_ / "bad";
  log = steno::testing::run(std::string(STENO_BINARY) + " model import " + kAsr.string() + " --out " + bad.string() +
                                " --postprocessing " + kCallhome.string(), &code);
  EXPECT_EQ(code, 1) << log;
  EXPECT_NE(log.find("Sortformer diarization models only"), std::string::npos) << log;
  EXPECT_FALSE(fs::exists(bad));

  // An existing model is never overwritten.
  log = steno::testing::run(std::string(STENO_BINARY) + " model import " + kAsr.string() + " --out " + out.string(),
                            &code);
  EXPECT_EQ(code, 1) << log;
  EXPECT_NE(log.find("already exists"), std::string::npos) << log;
  expect_same_directory(out, kConverted / "nemo-tiny-24");
}

}  // namespace
}  // namespace steno::nemo::testing
