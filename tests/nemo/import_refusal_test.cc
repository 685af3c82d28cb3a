// `steno model import` refuses what it must not turn into a model -- a YAML bomb, a .nemo without its config or
// weights, a model the engine cannot run, a truncated archive, absurd sizes -- with an error that says why, and
// leaves no output directory (nor its staging directory) behind. The .nemo files are built here from the committed
// reference's own members, one thing changed at a time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "nemo_test_util.h"
#include "steno/nemo/import.h"
#include "steno/nemo/tar_members.h"

namespace steno::nemo::testing {
namespace {

namespace fs = std::filesystem;

using Members = std::vector<std::pair<std::string, std::string>>;

// A ustar archive of `members` (regular files), as Python's tarfile writes one.
std::string make_tar(const Members& members) {
  std::string out;
  for (const auto& [name, data] : members) {
    char h[512] = {};
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(data.size()));
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = '0';
    std::memcpy(h + 257, "ustar", 6);
    std::memcpy(h + 263, "00", 2);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 8, "%06o", sum);
    out.append(h, 512);
    out += data;
    out.append((512 - data.size() % 512) % 512, '\0');
  }
  out.append(1024, '\0');
  return out;
}

// The reference .nemo's members by name.
std::map<std::string, std::string> reference(const std::string& which) {
  const std::vector<uint8_t> bytes = bytes_of(std::string(STENO_TEST_DATA) + "/" + which + "/model.nemo");
  std::map<std::string, std::string> out;
  for (const TarMember& m : read_tar(bytes)) out[m.name] = std::string(m.data.begin(), m.data.end());
  return out;
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

class ImportRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("steno_import_refusal_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  fs::path write(const std::string& name, const std::string& bytes) {
    const fs::path p = tmp_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  // The reference ASR .nemo with model_config.yaml edited by `edit` (nullptr: left out).
  fs::path asr_with_config(const std::function<std::string(std::string)>& edit) {
    Members members;
    for (const auto& [name, data] : reference("nemo-tiny")) {
      if (name != "model_config.yaml") members.emplace_back(name, data);
      else if (edit) members.emplace_back(name, edit(data));
    }
    return write("edited.nemo", make_tar(members));
  }

  // import_nemo must fail with `code` and a message containing `words`, leaving nothing in the temp directory but
  // the inputs.
  void expect_refused(const fs::path& nemo, ErrorCode code, const std::string& words, ImportOptions options = {}) {
    const fs::path out = tmp_ / "model";
    try {
      import_nemo(nemo, out, options);
      ADD_FAILURE() << nemo << " was imported";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(tmp_))
      EXPECT_EQ(e.path().filename().string().find("model.tmp"), std::string::npos) << e.path();
  }

  fs::path tmp_;
};

TEST_F(ImportRefusal, ReferenceBuiltHereImports) {
  // The control for every case below: the same members, unedited, make a model.
  const fs::path nemo = asr_with_config([](std::string y) { return y; });
  EXPECT_EQ(import_nemo(nemo, tmp_ / "model").model_type, "fastconformer_tdt");
}

TEST_F(ImportRefusal, YamlBomb) {
  // Billion laughs: 9 levels of 9 aliases, 387 million strings once expanded, 700 bytes as text.
  std::string bomb = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const char p = static_cast<char>(c - 1);
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 9; ++k) bomb += std::string(k ? ", *" : "*") + p;
    bomb += "]\n";
  }
  expect_refused(asr_with_config([&](std::string y) { return y + bomb; }), ErrorCode::kInvalidArgument,
                 "YAML bomb");
}

TEST_F(ImportRefusal, MissingConfig) {
  expect_refused(asr_with_config(nullptr), ErrorCode::kInvalidArgument, "model_config.yaml");
}

TEST_F(ImportRefusal, MissingWeights) {
  Members members;
  for (const auto& [name, data] : reference("nemo-tiny"))
    if (name != "model_weights.ckpt") members.emplace_back(name, data);
  expect_refused(write("noweights.nemo", make_tar(members)), ErrorCode::kInvalidArgument, "model_weights.ckpt");
}

TEST_F(ImportRefusal, CtcModel) {
  const std::string ctc =
      "target: nemo.collections.asr.models.ctc_bpe_models.EncDecCTCModelBPE\n"
      "preprocessor: {features: 80}\n"
      "encoder: {_target_: nemo.collections.asr.modules.ConformerEncoder, feat_in: 80, d_model: 64, n_layers: 2}\n"
      "decoder: {_target_: nemo.collections.asr.modules.ConvASRDecoder, feat_in: 64, num_classes: 128}\n";
  expect_refused(asr_with_config([&](std::string) { return ctc; }), ErrorCode::kUnimplemented, "EncDecCTCModelBPE");
}

TEST_F(ImportRefusal, RnntModel) {
  expect_refused(asr_with_config([](std::string y) {
                   y = replace_once(y, "model_type: tdt", "model_type: rnnt");
                   y = replace_once(y, "loss_name: tdt", "loss_name: default");
                   return replace_once(y, "num_extra_outputs: 5", "num_extra_outputs: 0");
                 }),
                 ErrorCode::kUnimplemented, "not a TDT model");
}

TEST_F(ImportRefusal, EncoderTheEngineLacks) {
  expect_refused(asr_with_config([](std::string y) {
                   return replace_once(y, "subsampling: dw_striding", "subsampling: striding");
                 }),
                 ErrorCode::kUnimplemented, "striding");
}

TEST_F(ImportRefusal, WeightsThatDoNotMatchTheConfig) {
  expect_refused(asr_with_config([](std::string y) { return replace_once(y, "n_layers: 2", "n_layers: 3"); }),
                 ErrorCode::kInvalidArgument, "missing tensor encoder.layers.2.");
}

TEST_F(ImportRefusal, AbsurdSizes) {
  expect_refused(asr_with_config([](std::string y) {
                   return replace_once(y, "n_layers: 2", "n_layers: 99999999999999999999999");
                 }),
                 ErrorCode::kInvalidArgument, "out of range");
  expect_refused(asr_with_config([](std::string y) { return y + "# " + std::string(17 << 20, 'x') + "\n"; }),
                 ErrorCode::kInvalidArgument, "over the limit");
  expect_refused(asr_with_config([](std::string y) { return y + "deep: " + std::string(100000, '[') + "\n"; }),
                 ErrorCode::kInvalidArgument, "model_config.yaml");
}

TEST_F(ImportRefusal, SortformerReferenceCycle) {
  Members members;
  for (const auto& [name, data] : reference("sortformer-tiny"))
    members.emplace_back(name, name != "model_config.yaml" ? data : replace_once(
        replace_once(data, "model_defaults:\n  fc_d_model: 64",
                     "model_defaults:\n  fc_d_model: ${sortformer_modules.fc_d_model}"),
        "  fc_d_model: 64\n  tf_d_model: 32", "  fc_d_model: ${model_defaults.fc_d_model}\n  tf_d_model: 32"));
  expect_refused(write("cycle.nemo", make_tar(members)), ErrorCode::kInvalidArgument, "cycle");
}

TEST_F(ImportRefusal, TruncatedArchive) {
  const std::vector<uint8_t> whole = bytes_of(std::string(STENO_TEST_DATA) + "/nemo-tiny/model.nemo");
  // Cut inside the first header, the first member, the middle, and one byte short of the last member's end (what
  // follows it is the end-of-archive padding, whose loss Python's tarfile forgives too).
  const TarMember last = read_tar(whole).back();
  const size_t last_end = static_cast<size_t>(last.data.data() + last.data.size() - whole.data());
  for (const size_t keep : {size_t{0}, size_t{300}, size_t{5000}, whole.size() / 2, last_end - 1}) {
    SCOPED_TRACE(keep);
    const fs::path cut = write("cut.nemo", std::string(whole.begin(), whole.begin() + static_cast<long>(keep)));
    const fs::path out = tmp_ / "model";
    EXPECT_THROW(import_nemo(cut, out), Error);
    EXPECT_FALSE(fs::exists(out));
  }
}

TEST_F(ImportRefusal, NotANemo) {
  expect_refused(write("text.nemo", std::string(4096, 'x')), ErrorCode::kInvalidArgument, "not a .nemo file");
  expect_refused(write("gzip.nemo", std::string("\x1f\x8b\x08\x00", 4) + std::string(600, '\0')),
                 ErrorCode::kUnimplemented, "gzip");
  expect_refused(tmp_ / "absent.nemo", ErrorCode::kNotFound, "no such file");
}

TEST_F(ImportRefusal, BadOptions) {
  const fs::path asr = fs::path(STENO_TEST_DATA) / "nemo-tiny/model.nemo";
  ImportOptions o;
  o.dtype = "f8";
  expect_refused(asr, ErrorCode::kInvalidArgument, "--dtype", o);
  o = {};
  o.frontend_version = "2.6";
  expect_refused(asr, ErrorCode::kInvalidArgument, "--frontend-version", o);
  o = {};
  o.postprocessing = write("post.yaml", "parameters: {onset: 0.5, colour: 3}\n");
  expect_refused(fs::path(STENO_TEST_DATA) / "sortformer-tiny/model.nemo", ErrorCode::kInvalidArgument, "colour", o);
}

TEST_F(ImportRefusal, ExistingOutputIsLeftAlone) {
  const fs::path out = tmp_ / "model";
  fs::create_directories(out);
  write("model/keep.txt", "mine");
  try {
    import_nemo(fs::path(STENO_TEST_DATA) / "nemo-tiny/model.nemo", out);
    ADD_FAILURE() << "imported over a directory that was not empty";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bytes_of((out / "keep.txt").string()).size(), 4u);
  EXPECT_FALSE(fs::exists(out / "config.json"));
}

}  // namespace
}  // namespace steno::nemo::testing
