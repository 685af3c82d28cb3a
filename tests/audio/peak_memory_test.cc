// Refusing an over-long file must not read it: load_audio_file maps the file and refuses it from the length its
// header states, touching only the first pages. Two-hour files (a 230 MB WAV, a FLAC of silence) refused under a
// 1200 s limit must raise peak RSS by under 100 MB. Each load runs in a forked child whose high-water mark is reset
// first, so that this process's own history can neither hide the growth nor cause it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>

#include "audio_fixtures.h"
#include "steno/audio/decode.h"
#include "steno/core/error.h"

namespace steno::audio {
namespace {

constexpr long kBudgetKb = 100 * 1024;

long vm_hwm_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

struct Peak {
  long before_kb = -1, after_kb = -1;
  std::string outcome;  // what `work` reported
  long growth_kb() const { return after_kb - before_kb; }
};

// Runs `work` in a forked child and returns its peak-RSS growth. A fresh child's VmHWM starts at its RSS at fork;
// writing 5 to clear_refs resets it to the current RSS as well, for kernels that would carry more over.
Peak peak_rss_of(const std::function<std::string()>& work) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::ofstream("/proc/self/clear_refs") << "5";
    const long before = vm_hwm_kb();
    const std::string outcome = work();
    const std::string report = std::to_string(before) + " " + std::to_string(vm_hwm_kb()) + " " + outcome;
    const ssize_t ignored = ::write(fds[1], report.data(), report.size());
    (void)ignored;
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) report.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  Peak p;
  std::istringstream in(report);
  in >> p.before_kb >> p.after_kb;
  std::getline(in >> std::ws, p.outcome);
  return p;
}

std::string refusal_of(const std::string& path) {
  try {
    load_audio_file(path, {.max_duration_s = 1200});
    return "decoded";
  } catch (const Error& e) {
    return std::string(error_code_name(e.code())) + ": " + e.what();
  }
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
    const Peak p = peak_rss_of([&] { return refusal_of(dir_->file(name)); });
    ASSERT_GE(p.before_kb, 0) << "no VmHWM from the child";
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
  // The control: reading the WAV into memory, as load_audio_file once did, shows as its full size.
  ASSERT_EQ(errors_, "");
  const Peak p = peak_rss_of([&] { return std::to_string(testing::read_bytes(dir_->file("two_hours.wav")).size()); });
  EXPECT_EQ(p.outcome, "230400044");
  EXPECT_GT(p.growth_kb(), 220 * 1024);
  std::printf("[ peak RSS ] reading two_hours.wav whole: +%ld kB\n", p.growth_kb());
}

TEST_F(PeakMemory, TwoHourWavIsRefusedFromItsHeader) { expect_refused_cheaply("two_hours.wav"); }

TEST_F(PeakMemory, TwoHourFlacIsRefusedFromItsHeader) { expect_refused_cheaply("two_hours.flac"); }

}  // namespace
}  // namespace steno::audio
