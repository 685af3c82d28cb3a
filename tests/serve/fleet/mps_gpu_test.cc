// MPS for real, on a machine with an NVIDIA GPU and the driver's MPS binaries (the project's H200, as root: the
// daemon starts there as root). Skips, saying why, anywhere else. The clients are this binary started again
// with worker_env() and a filter that runs only MpsGpuClient.Probe, which reports what CUDA shows it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "mps_command.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "serve/fleet/mps.h"

namespace steno::serve::fleet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kProbeVar = "STENO_MPS_PROBE";

// Why MPS cannot be tested here, or empty when it can.
std::string missing_mps() {
  if (!steno::cuda::built()) return "built without CUDA";
  if (steno::cuda::device_count() == 0) return "no CUDA device";
  try {
    find_mps_control("");
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

#define SKIP_WITHOUT_MPS()                                    \
  do {                                                        \
    const std::string why = missing_mps();                    \
    if (!why.empty()) GTEST_SKIP() << "no MPS here: " << why; \
  } while (0)

// Runs this binary's probe as an MPS client of `daemon` (worker `worker` of `workers`); returns the SM count
// it saw, or -1 (with a test failure) when it did not report one.
int probe_sms(const MpsDaemon& daemon, int worker, int workers) {
  EnvVars env = daemon.worker_env(worker, workers);
  env.emplace_back(kProbeVar, "1");
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const CommandResult r = run_command({{self, "--gtest_filter=MpsGpuClient.Probe"}, env, "", "", 60s});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("probe sms=");
  if (at == std::string::npos) {
    ADD_FAILURE() << "the probe reported nothing: " << r.output;
    return -1;
  }
  return std::atoi(r.output.c_str() + at + 10);
}

// Not a test of its own: the client side of the tests below (skipped unless they start it).
TEST(MpsGpuClient, Probe) {
  if (std::getenv(kProbeVar) == nullptr) GTEST_SKIP() << "the client side of MpsGpu tests, run by them";
  // Under MPS the SM count a client sees is its active-thread cap (on an H200: 32 of 132 SMs at 25 %).
  std::printf("probe sms=%d\n", steno::cuda::sm_count(0));
}

TEST(MpsGpu, StartsAPrivateDaemonAndRemovesItAtExit) {
  SKIP_WITHOUT_MPS();
  fs::path pipe, log;
  {
    auto daemon = MpsDaemon::open({});
    EXPECT_TRUE(daemon->owned());
    pipe = daemon->pipe_dir();
    log = daemon->log_dir();
    EXPECT_TRUE(pipe.string().starts_with("/tmp/steno-mps-")) << pipe;
    EXPECT_TRUE(fs::exists(pipe / "control"));
    const MpsStatus st = daemon->status();
    EXPECT_EQ(st.state, MpsState::kReady) << st.text;
    EXPECT_EQ(st.servers, 0) << st.text;  // no client yet
  }
  EXPECT_FALSE(fs::exists(pipe)) << "the private pipe directory outlived the daemon";
  EXPECT_FALSE(fs::exists(log));
}

TEST(MpsGpu, WorkersAreClientsCappedToTheirShare) {
  SKIP_WITHOUT_MPS();
  const int all = steno::cuda::sm_count(0);  // this process initialised CUDA before the daemon: not a client
  auto daemon = MpsDaemon::open({});
  const int quarter = probe_sms(*daemon, 0, 4);  // 25 %
  EXPECT_GT(quarter, 0);
  EXPECT_LE(quarter, (all + 3) / 4) << "a client at 25 % saw " << quarter << " of " << all << " SMs";
  const int whole = probe_sms(*daemon, 0, 1);  // 100 %
  EXPECT_EQ(whole, all);
  const MpsStatus st = daemon->status();
  EXPECT_EQ(st.state, MpsState::kReady) << st.text;
  EXPECT_GE(st.servers, 1) << st.text;  // the server outlives its clients
}

TEST(MpsGpu, RestartKeepsTheDirectoriesAndServesClientsAgain) {
  SKIP_WITHOUT_MPS();
  auto daemon = MpsDaemon::open({});
  const std::string pipe = daemon->pipe_dir();
  ASSERT_GT(probe_sms(*daemon, 0, 2), 0);
  daemon->restart();
  EXPECT_EQ(daemon->pipe_dir(), pipe);
  const MpsStatus st = daemon->status();
  EXPECT_EQ(st.state, MpsState::kReady) << st.text;
  EXPECT_EQ(st.servers, 0) << st.text;  // a new daemon: its servers went with the old one
  EXPECT_GT(probe_sms(*daemon, 1, 2), 0);
}

TEST(MpsGpu, JoinsARunningDaemonAndLeavesItRunning) {
  SKIP_WITHOUT_MPS();
  auto owner = MpsDaemon::open({});
  {
    MpsOptions join;
    join.join_existing = true;
    join.pipe_dir = owner->pipe_dir();
    auto joined = MpsDaemon::open(join);
    EXPECT_FALSE(joined->owned());
    EXPECT_EQ(joined->status().state, MpsState::kReady);
    EXPECT_GT(probe_sms(*joined, 0, 2), 0);
    joined->restart();  // joined, nothing faulted: returns at once
  }
  EXPECT_EQ(owner->status().state, MpsState::kReady) << owner->status().text;

  MpsOptions again;  // starting a second daemon on the same pipe directory is refused
  again.pipe_dir = owner->pipe_dir();
  again.log_dir = owner->log_dir();
  try {
    MpsDaemon::open(again);
    ADD_FAILURE() << "a second daemon started on " << again.pipe_dir;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already runs"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace steno::serve::fleet
