// `steno transcribe` as a user runs it: the real binary, real files, its exit status and what it prints.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together, or stdout alone when stderr went to a file
};

// Runs steno with `args`; stderr goes with stdout, or to `stderr_file` when one is given; `env` (`NAME=value ...`)
// is set for it.
RunResult run(const std::string& args, const std::string& stderr_file = "", const std::string& env = "") {
  RunResult r;
  const std::string cmd = (env.empty() ? "" : "env " + env + " ") + std::string(STENO_BINARY) + " " + args +
                          (stderr_file.empty() ? " 2>&1" : " 2>" + stderr_file);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

class TranscribeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::temp_directory_path() / ("steno_cli_test_" + std::to_string(getpid()));
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = tmp_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  const std::string model_ = (fs::path(STENO_BINARY_DIR) / "testdata/nemo-tiny-25").string();
  const std::string data_ = (fs::path(STENO_TEST_DATA) / "nemo-tiny").string();
  fs::path tmp_;
};

TEST_F(TranscribeCli, TextMatchesNeMoForEveryClip) {
  GoldenSet golden((fs::path(STENO_BINARY_DIR) / "testdata/golden-nemo25").string());
  const std::string clips[] = {"clip0_1.7s.wav", "clip1_4.3s.wav", "clip2_9.0s.wav"};
  std::string args = "transcribe --model " + model_;
  for (const auto& c : clips) args += " " + data_ + "/" + c;
  const RunResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (int i = 0; i < 3; ++i) {
    const std::string line = data_ + "/" + clips[i] + "\t" + golden.text("batch.hyp" + std::to_string(i) + ".text");
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << r.out;
  }
}

TEST_F(TranscribeCli, JsonHasWordsSegmentsAndTimings) {
  const RunResult r = run("transcribe --format json --model " + model_ + " " + data_ + "/clip2_9.0s.wav");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& f = doc.at("files").at(0);
  EXPECT_NEAR(f.at("duration").get<double>(), 9.0, 1e-9);
  ASSERT_FALSE(f.at("words").empty());
  double last_end = 0;
  for (const auto& w : f.at("words")) {
    EXPECT_GE(w.at("start").get<double>(), 0.0);
    EXPECT_LE(w.at("start").get<double>(), w.at("end").get<double>());
    EXPECT_LE(w.at("end").get<double>(), 9.0 + 0.4);  // a TDT duration may run past the last frame
    last_end = std::max(last_end, w.at("end").get<double>());
  }
  EXPECT_GT(last_end, 1.0);
  EXPECT_FALSE(f.at("segments").empty());
  EXPECT_GT(f.at("timings_ms").at("encoder").get<double>(), 0.0);
  EXPECT_GT(doc.at("summary").at("rtfx").get<double>(), 0.0);
}

// --gemm auto (the default) picks the CPU's GEMM library by the command's audio: OpenBLAS for a short job (no
// kernel generation at start), oneDNN from 12 s in all; an explicit --gemm stands.
TEST_F(TranscribeCli, GemmLibraryFollowsTheAudiosLengthUnlessGiven) {
  const auto gemm = [&](const std::string& args) {
    const RunResult r = run("transcribe --format json --model " + model_ + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out).at("summary").at("gemm").get<std::string>() : "";
  };
  const std::string nine = data_ + "/clip2_9.0s.wav", thirteen = nine + " " + data_ + "/clip1_4.3s.wav";
  EXPECT_EQ(gemm(nine), "openblas");
  EXPECT_EQ(gemm(thirteen), "onednn");
  EXPECT_EQ(gemm("--gemm openblas " + thirteen), "openblas");
  EXPECT_EQ(gemm("--gemm onednn " + nine), "onednn");
  EXPECT_NE(run("transcribe --gemm mkl " + nine).out.find("unknown GEMM backend 'mkl'"), std::string::npos);
}

// A process maps only the libraries its work uses (docs/architecture.md, "Libraries opened when first needed"): the
// loader's own record of what it opened (LD_DEBUG=files, to the file given) names none of the large optional ones
// for `--help`, and for a transcription only the GEMM library it multiplies with.
TEST_F(TranscribeCli, OpensOnlyTheLibrariesItsWorkUses) {
  const std::string loaded = (tmp_ / "loaded").string();
  const auto opened = [&](const std::string& args) {
    const RunResult r = run(args, "", "LD_DEBUG=files LD_DEBUG_OUTPUT=" + loaded);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::string all;  // LD_DEBUG_OUTPUT appends the process id to the name
    for (const auto& e : fs::directory_iterator(tmp_))
      if (e.path().filename().string().rfind("loaded.", 0) == 0) {
        all += read(e.path());
        fs::remove(e.path());
      }
    return all;
  };
  const std::string help = opened("--help");
  ASSERT_NE(help.find("libstdc++"), std::string::npos) << "LD_DEBUG=files wrote nothing: " << help;
  for (const char* lib : {"libgrpc", "libdnnl", "libopenblas", "libcurl", "libcrypto", "libcublasLt", "libavformat",
                          "libavcodec"})
    EXPECT_EQ(help.find(lib), std::string::npos) << "`steno --help` opened " << lib;
  const std::string nine = data_ + "/clip2_9.0s.wav";
  const std::string blas = opened("transcribe --gemm openblas --model " + model_ + " " + nine);
  EXPECT_NE(blas.find("libopenblas"), std::string::npos);
  for (const char* lib : {"libgrpc", "libdnnl", "libcurl", "libcrypto", "libcublasLt", "libavformat", "libavcodec"})
    EXPECT_EQ(blas.find(lib), std::string::npos) << "`steno transcribe --gemm openblas` opened " << lib;
  const std::string dnnl = opened("transcribe --gemm onednn --model " + model_ + " " + nine);
  EXPECT_NE(dnnl.find("libdnnl"), std::string::npos);
  EXPECT_EQ(dnnl.find("libopenblas"), std::string::npos);
}

TEST_F(TranscribeCli, BadInputsFailWithAClearMessage) {
  const std::string wav = read(fs::path(data_) / "clip1_4.3s.wav");
  struct Case {
    std::string name, bytes, expect;
  } cases[] = {
      {"empty.wav", "", "empty"},
      {"text.wav", "this is not audio at all, just some text\n", "not audio"},
      {"header_only.wav", wav.substr(0, 44), "no audio could be decoded"},
  };
  for (const auto& c : cases) {
    const RunResult r = run("transcribe --model " + model_ + " " + write(c.name, c.bytes));
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.out;
    EXPECT_NE(r.out.find(c.name), std::string::npos) << "error should name the file: " << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.name << ": " << r.out;
  }
}

// Decoding options that contradict each other, or an LM for another tokenizer, stop with a message naming them.
TEST_F(TranscribeCli, DecodingOptionsThatDoNotFitAreRefused) {
  const std::string clip = data_ + "/clip1_4.3s.wav";
  const std::string bundled_lm = std::string(STENO_SOURCE_DIR) + "/models/steno-tdt-small-en/lm.arpa.gz";
  const struct {
    std::string args, expect;
  } cases[] = {
      {"--lm-alpha 0.3", "need beam decoding"},
      {"--decoding greedy --lm " + bundled_lm, "need beam decoding"},
      {"--decoding beam --lm-alpha 0.3", "needs an LM"},
      {"--lm " + tmp_.string() + "/absent.arpa", "cannot open"},
      // nemo-tiny has 128 tokens; the bundled LM is for the bundled model's 256.
      {"--lm " + bundled_lm, "is not a token of this model"},
      {"--decoding greedy --lexicon " + bundled_lm, "a lexicon needs beam decoding"},
      {"--decoding beam --unknown-word-penalty 3", "needs a lexicon"},
      {"--lexicon " + tmp_.string() + "/absent.txt", "cannot open"},
      {"--lexicon " + write("two.txt", "two words\n"), "one word"},
  };
  for (const auto& c : cases) {
    const RunResult r = run("transcribe --model " + model_ + " " + c.args + " " + clip);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << ": " << r.out;
  }
  // Beam search without an LM runs on any model (its transcripts are checked on the bundled model's test sets).
  const RunResult beam = run("transcribe --decoding beam --beam-size 2 --model " + model_ + " " + clip);
  EXPECT_EQ(beam.exit_code, 0) << beam.out;
  // So does a lexicon, which implies beam search as an LM does.
  const RunResult lexicon = run("transcribe --lexicon " + write("words.txt", "the\nworld\n") + " --model " + model_ +
                                " " + clip);
  EXPECT_EQ(lexicon.exit_code, 0) << lexicon.out;
}

TEST_F(TranscribeCli, TruncatedFileIsTranscribedWithAWarning) {
  // A test clip cut off inside a FLAC frame, as a crashed recorder leaves it: transcribed as far as it goes, with a
  // warning on stderr and in the JSON, and exit status 0. The bundled model, so that the words are real.
  const std::string model = (fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en").string();
  const std::string clip = read(fs::path(STENO_TEST_DATA) / "testset/espeak/audio/test-0000025.flac");
  const std::string cut = write("cut.flac", clip.substr(0, clip.size() * 6 / 10));
  const std::string whole = write("whole.flac", clip);
  const std::string truncated = "truncated: the FLAC header says 54698 frames (3.42 s), the file holds ";

  const fs::path err = tmp_ / "stderr.txt";
  RunResult r = run("transcribe --model " + model + " " + whole + " " + cut, err.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << read(err);
  EXPECT_NE(r.out.find(whole + "\ttwenty six plus twenty four equals fifty\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(cut + "\ttwenty six plus"), std::string::npos) << r.out;
  EXPECT_NE(read(err).find("steno: " + cut + ": warning: " + truncated), std::string::npos) << read(err);
  EXPECT_EQ(read(err).find(whole), std::string::npos) << "no warning for the whole file: " << read(err);

  r = run("transcribe --format json --model " + model + " " + whole + " " + cut, err.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << read(err);
  const auto doc = nlohmann::json::parse(r.out);
  const auto& files = doc.at("files");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files.at(0).at("warnings"), nlohmann::json::array());
  ASSERT_EQ(files.at(1).at("warnings").size(), 1u);
  const std::string json_warning = files.at(1).at("warnings").at(0).get<std::string>();
  EXPECT_EQ(json_warning.rfind(truncated, 0), 0u) << json_warning;
  EXPECT_NE(read(err).find("steno: " + cut + ": warning: " + json_warning + "\n"), std::string::npos) << read(err);
  EXPECT_LT(files.at(1).at("duration").get<double>(), 2.1);
  EXPECT_EQ(doc.at("summary").at("failed"), 0);
}

TEST_F(TranscribeCli, WavThatOverstatesItsLengthIsTranscribedWithAWarning) {
  // A data size far past the end of the file (a streaming writer's placeholder, never patched).
  std::string wav = read(fs::path(data_) / "clip1_4.3s.wav");
  const uint32_t huge = 0x7ffffff0u;
  wav.replace(40, 4, reinterpret_cast<const char*>(&huge), 4);
  const std::string path = write("lying.wav", wav);
  const RunResult r = run("transcribe --model " + model_ + " " + path);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("steno: " + path + ": warning: truncated: the WAV header says 1073741816 frames (67108.86 s), "
                       "the file holds 68800 (4.30 s); transcribed the 4.30 s present"),
            std::string::npos)
      << r.out;
}

TEST_F(TranscribeCli, GoodFilesSurviveABadNeighbour) {
  const RunResult r =
      run("transcribe --model " + model_ + " " + write("empty.wav", "") + " " + data_ + "/clip0_1.7s.wav");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("clip0_1.7s.wav\t"), std::string::npos) << r.out;
}

TEST_F(TranscribeCli, UnknownModelAndMissingFile) {
  RunResult r = run("transcribe --model /nonexistent/model " + data_ + "/clip0_1.7s.wav");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("model directory not found: /nonexistent/model"), std::string::npos) << r.out;
  r = run("transcribe --model " + model_ + " /nonexistent/audio.wav");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/nonexistent/audio.wav"), std::string::npos) << r.out;
}

TEST_F(TranscribeCli, TensorOfTheWrongShapeIsNamed) {
  // Copy the model, then swap one tensor for a wrong-shaped one via `steno model random` of a different width.
  const fs::path bad = tmp_ / "bad-model";
  fs::copy(model_, bad);
  std::string config = read(bad / "config.json");
  const auto pos = config.find("\"pred_hidden\": 64");
  ASSERT_NE(pos, std::string::npos) << config;
  config.replace(pos, 17, "\"pred_hidden\": 32");
  write("bad-model/config.json", config);
  const RunResult r = run("transcribe --model " + bad.string() + " " + data_ + "/clip0_1.7s.wav");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("decoder.prediction.embed.weight"), std::string::npos) << r.out;
}

TEST_F(TranscribeCli, FiveHourFileIsRefusedNamingTheLimit) {
  // A real 5-hour 16 kHz mono WAV (576 MB of silence, sparse), refused by the default limit of 4 hours.
  const fs::path p = tmp_ / "five-hours.wav";
  {
    const uint32_t rate = 16000, samples = 5 * 3600 * rate, data_bytes = samples * 2;
    std::ofstream out(p, std::ios::binary);
    auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
    out << "RIFF";
    u32(36 + data_bytes);
    out << "WAVEfmt ";
    u32(16), u16(1), u16(1), u32(rate), u32(rate * 2), u16(2), u16(16);
    out << "data";
    u32(data_bytes);
    out.seekp(data_bytes - 1, std::ios::cur);
    out.put('\0');
  }
  const RunResult r = run("transcribe --model " + model_ + " " + p.string());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--max-audio-seconds"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("18000"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace steno::testing
