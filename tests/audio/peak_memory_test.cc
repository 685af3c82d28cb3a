// Refusing an over-long file must not read it: load_audio_file maps the file and refuses it from the length its
// header states, touching only the first pages. Two-hour files (a 230 MB WAV, a FLAC of silence) refused under a
// 1200 s limit must raise peak RSS by under 100 MB. Each load runs in a fresh process (audio_peak_probe) that resets
// its high-water mark first, so that this process's history can neither hide the growth nor cause it: a forked
// child would share this process's freed but resident heap and could reuse it unseen.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

constexpr long kBudgetKb = 100 * 1024;

struct Peak {
  long before_kb = -1, after_kb = -1;
  std::string outcome;  // what the probe reported
  long growth_kb() const { return after_kb - before_kb; }
};

// Runs `audio_peak_probe MODE PATH` and parses its "before after outcome" line.
Peak probe(const std::string& mode, const std::string& path) {
  Peak p;
  FILE* pipe = ::popen((std::string(STENO_AUDIO_PEAK_PROBE) + " " + mode + " '" + path + "'").c_str(), "r");
  if (pipe == nullptr) return p;
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  ::pclose(pipe);
  std::istringstream in(out);
  in >> p.before_kb >> p.after_kb;
  std::getline(in >> std::ws, p.outcome);
  return p;
}

class PeakMemory : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<testing::TempDir>();
    // -D: no dither, so the FLAC is true silence; 115.2 M frames either way.
    errors_ = testing::run_tool("sox", "sox -D -n -r 16000 -b 16 -c 1 " + dir_->file("two_hours.wav") +
                                           " trim 0 7200 >/dev/null 2>&1");
    if (errors_.empty())  // encoded from the WAV, so after it
      errors_ = testing::run_tool("flac", "flac -s -f -o " + dir_->file("two_hours.flac") + " " +
                                              dir_->file("two_hours.wav") + " >/dev/null 2>&1");
  }
  static void TearDownTestSuite() { dir_.reset(); }
  static std::unique_ptr<testing::TempDir> dir_;
  static std::string errors_;

  void expect_refused_cheaply(const std::string& name) {
    ASSERT_EQ(errors_, "");
    const Peak p = probe("load", dir_->file(name));
    ASSERT_GE(p.before_kb, 0) << "no report from the probe";
    EXPECT_EQ(p.outcome, std::string(error_code_name(ErrorCode::kOutOfRange)) +
                             ": audio is 7200.0 s, over the limit of 1200 s (--max-audio-seconds)");
    EXPECT_LT(p.growth_kb(), kBudgetKb);
    std::printf("[ peak RSS ] refusing %s (%ju bytes): VmHWM %ld -> %ld kB, +%ld kB\n", name.c_str(),
                static_cast<uintmax_t>(std::filesystem::file_size(dir_->file(name))), p.before_kb, p.after_kb,
                p.growth_kb());
    RecordProperty("peak_rss_growth_kb_" + name, std::to_string(p.growth_kb()));
  }
};
std::unique_ptr<testing::TempDir> PeakMemory::dir_;
std::string PeakMemory::errors_;

TEST_F(PeakMemory, TheMeasurementSeesAFileReadWhole) {
  // The control: reading the WAV into memory shows as its full size, so a loader that read the file before checking
  // its header would fail the budget.
  ASSERT_EQ(errors_, "");
  const Peak p = probe("read", dir_->file("two_hours.wav"));
  EXPECT_EQ(p.outcome, "230400044");
  EXPECT_GT(p.growth_kb(), 220 * 1024);  // 225,000 kB of file
  std::printf("[ peak RSS ] reading two_hours.wav whole: +%ld kB\n", p.growth_kb());
}

TEST_F(PeakMemory, TwoHourWavIsRefusedFromItsHeader) { expect_refused_cheaply("two_hours.wav"); }

TEST_F(PeakMemory, TwoHourFlacIsRefusedFromItsHeader) { expect_refused_cheaply("two_hours.flac"); }

}  // namespace
}  // namespace steno::audio
