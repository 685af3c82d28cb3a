// MPS management where no MPS can run (CI: no GPU, no MPS binaries): the worker environment's arithmetic, the
// control binary lookup, the clear failures, and the process runner the daemon code is built on (exercised with
// real programs: cat, sh, env, sleep). The daemon itself is tested on a GPU by mps_gpu_test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../../error_util.h"
#include "mps_command.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "serve/fleet/mps.h"

namespace steno::serve::fleet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::map<std::string, std::string> as_map(const EnvVars& env) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : env) EXPECT_TRUE(m.emplace(k, v).second) << "duplicate " << k;
  return m;
}

using steno::testing::error_of;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A fresh directory under the test's temporary directory, removed at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "steno-mps-test-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// ---- the worker environment ------------------------------------------------------------------------------

TEST(MpsWorkerEnv, ThreadPercentageIsAHundredOverTheWorkersRounded) {
  const int want[] = {100, 50, 33, 25, 20, 17, 14, 13};
  for (int workers = 1; workers <= 8; ++workers)
    EXPECT_EQ(mps_thread_percentage(0, workers), want[workers - 1]) << workers << " workers";
  EXPECT_EQ(mps_thread_percentage(0, 300), 1);  // never 0, which MPS would not take
  EXPECT_EQ(mps_thread_percentage(40, 4), 40);  // a given value wins, whatever the count
  EXPECT_EQ(mps_thread_percentage(100, 8), 100);
  EXPECT_TRUE(contains(error_of([] { mps_thread_percentage(101, 2); }, ErrorCode::kInvalidArgument), "1..100"));
  error_of([] { mps_thread_percentage(-5, 2); }, ErrorCode::kInvalidArgument);
  error_of([] { mps_thread_percentage(0, 0); }, ErrorCode::kInvalidArgument);
}

TEST(MpsWorkerEnv, PinnedLimitUsesTheDocumentedDevEqualsLimitFormat) {
  EXPECT_EQ(mps_pinned_limit("8G", 0), "0=8G");
  EXPECT_EQ(mps_pinned_limit("512MB", 3), "3=512MB");
  EXPECT_EQ(mps_pinned_limit("1.5G", 0), "0=1.5G");
  EXPECT_EQ(mps_pinned_limit("0=1G,1=512MB", 0), "0=1G,1=512MB");
  EXPECT_EQ(mps_pinned_limit("GPU-8f6d1e2a-0b1c-4d5e-9f00-123456789abc=4G", 0),
            "GPU-8f6d1e2a-0b1c-4d5e-9f00-123456789abc=4G");
  for (const char* bad : {"", "eight", "8X", "0=", "=8G", "0=8G,", "0=8G;1=4G", "0=8GiB", "x=8G", "0=.5G", "0==8G"}) {
    const std::string msg = error_of([&] { mps_pinned_limit(bad, 0); }, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(contains(msg, "0=8G,1=512MB")) << "'" << bad << "': " << msg;  // the message shows the format
  }
}

TEST(MpsWorkerEnv, HasTheDaemonsDirectoriesAndTheWorkersShare) {
  MpsOptions options;
  auto env = as_map(mps_worker_env(options, "/tmp/p", "/tmp/l", 0, 4));
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"CUDA_MPS_PIPE_DIRECTORY", "/tmp/p"},
                                                     {"CUDA_MPS_LOG_DIRECTORY", "/tmp/l"},
                                                     {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25"}}));
  options.active_thread_percentage = 60;
  options.pinned_device_mem_limit = "20G";
  options.device = 1;
  env = as_map(mps_worker_env(options, "/tmp/p", "", 2, 3));  // a joined daemon whose log directory is unknown
  EXPECT_EQ(env, (std::map<std::string, std::string>{{"CUDA_MPS_PIPE_DIRECTORY", "/tmp/p"},
                                                     {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "60"},
                                                     {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "1=20G"}}));
  error_of([&] { mps_worker_env(options, "/tmp/p", "", 3, 3); }, ErrorCode::kInvalidArgument);
  error_of([&] { mps_worker_env(options, "", "", 0, 3); }, ErrorCode::kInvalidArgument);
}

// ---- finding the control binary and failing clearly ------------------------------------------------------

TEST(MpsControl, AConfiguredPathThatDoesNotExistFailsNamingIt) {
  const std::string msg =
      error_of([] { find_mps_control("/nonexistent/nvidia-cuda-mps-control"); }, ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(msg, "/nonexistent/nvidia-cuda-mps-control")) << msg;
  EXPECT_TRUE(contains(msg, "does not exist")) << msg;
}

TEST(MpsControl, AConfiguredPathMustBeExecutable) {
  TempDir dir;
  const fs::path file = dir.path / "nvidia-cuda-mps-control";
  std::ofstream(file) << "not a program\n";
  ::chmod(file.c_str(), 0644);
  const std::string msg = error_of([&] { find_mps_control(file.string()); }, ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(msg, "not an executable")) << msg;
}

TEST(MpsControl, IsLookedUpOnPath) {
  // Only the lookup is tested: the file is never run.
  TempDir dir;
  const fs::path file = dir.path / "nvidia-cuda-mps-control";
  std::ofstream(file) << "#!/bin/sh\nexit 1\n";
  ::chmod(file.c_str(), 0755);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", ("/nonexistent:" + dir.path.string()).c_str(), 1);
  const std::string found = find_mps_control("");
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(found, file.string());
}

// On this machine (no GPU or no MPS binaries) asking for MPS fails, saying what is missing and what to do.
TEST(MpsDaemonUnavailable, StartingSaysWhatIsMissing) {
  bool have_control = true;
  try {
    find_mps_control("");
  } catch (const Error&) {
    have_control = false;
  }
  if (have_control && steno::cuda::device_count() > 0)
    GTEST_SKIP() << "this machine has a GPU and MPS: mps_gpu_test covers it";
  MpsOptions options;
  options.timeout = 2s;
  const std::string msg = error_of([&] { MpsDaemon::open(options); }, ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(msg, "MPS was asked for but cannot be had here")) << msg;
  if (!have_control) {
    EXPECT_TRUE(contains(msg, "nvidia-cuda-mps-control was found neither on PATH")) << msg;
  }
  if (!steno::cuda::built()) {
    EXPECT_TRUE(contains(msg, "built without CUDA")) << msg;
  } else if (steno::cuda::device_count() == 0) {
    EXPECT_TRUE(contains(msg, "no CUDA GPU is visible")) << msg;
  }
  EXPECT_TRUE(contains(msg, "share the GPU by processes or lanes instead")) << msg;
}

TEST(MpsDaemonUnavailable, AControlBinaryThatDoesNotExistIsNamed) {
  MpsOptions options;
  options.control_binary = "/opt/missing/nvidia-cuda-mps-control";
  const std::string msg = error_of([&] { MpsDaemon::open(options); }, ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(msg, "the MPS control binary /opt/missing/nvidia-cuda-mps-control does not exist")) << msg;
}

TEST(MpsDaemonUnavailable, JoiningWithoutAControlPipeSaysNoDaemonRunsThere) {
  TempDir dir;  // exists, but no daemon made a pipe in it
  MpsOptions options;
  options.join_existing = true;
  options.pipe_dir = dir.path.string();
  const std::string msg = error_of([&] { MpsDaemon::open(options); }, ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(msg, "there is no MPS control pipe " + (dir.path / "control").string())) << msg;
  EXPECT_TRUE(contains(msg, "CUDA_MPS_PIPE_DIRECTORY=" + dir.path.string())) << msg;

  options.pipe_dir.clear();
  error_of([&] { MpsDaemon::open(options); }, ErrorCode::kInvalidArgument);  // joining needs the directory
}

// ---- the process runner ----------------------------------------------------------------------------------

TEST(MpsCommand, PassesInputAndCapturesOutput) {
  const CommandResult r = run_command({{"/bin/cat"}, {}, "get_server_list\n", "", 5s});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "get_server_list\n");
}

TEST(MpsCommand, ArgumentsAreNotInterpretedByAShell) {
  const CommandResult r = run_command({{"/bin/echo", "$(id)", "a;b", "'q'"}, {}, "", "", 5s});
  EXPECT_EQ(r.output, "$(id) a;b 'q'\n");
}

TEST(MpsCommand, ReportsTheExitStatusAndStderr) {
  const CommandResult r = run_command({{"/bin/sh", "-c", "echo oops >&2; exit 3"}, {}, "", "", 5s});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "oops\n");
}

TEST(MpsCommand, AddsAndOverridesEnvironmentVariables) {
  ::setenv("STENO_MPS_TEST_VAR", "parent", 1);
  const CommandResult r =
      run_command({{"/usr/bin/env"}, {{"STENO_MPS_TEST_VAR", "child"}, {"CUDA_MPS_PIPE_DIRECTORY", "/x"}}, "", "", 5s});
  ::unsetenv("STENO_MPS_TEST_VAR");
  EXPECT_TRUE(contains(r.output, "\nSTENO_MPS_TEST_VAR=child\n") || r.output.starts_with("STENO_MPS_TEST_VAR=child\n"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "STENO_MPS_TEST_VAR=parent"));
  EXPECT_TRUE(contains(r.output, "CUDA_MPS_PIPE_DIRECTORY=/x\n"));
  EXPECT_TRUE(contains(r.output, "PATH="));  // the rest of the environment is inherited
}

TEST(MpsCommand, KillsWhatOverstaysItsBound) {
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = run_command({{"/bin/sleep", "30"}, {}, "", "", 200ms});
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// `nvidia-cuda-mps-control -d` forks the daemon and exits; the daemon inherits the output. The runner must come
// back when the launcher exits, not when the daemon closes the pipe.
TEST(MpsCommand, ReturnsWhenTheProcessExitsEvenIfAChildKeepsTheOutputOpen) {
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = run_command({{"/bin/sh", "-c", "sleep 3 & echo launched"}, {}, "", "", 10s});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "launched\n");
}

TEST(MpsCommand, WritesToAFileWhenAsked) {
  TempDir dir;
  const fs::path out = dir.path / "out.txt";
  const CommandResult r = run_command({{"/bin/sh", "-c", "echo to-file; echo err >&2"}, {}, "", out.string(), 5s});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, "");
  std::ifstream in(out);
  std::string a, b;
  std::getline(in, a);
  std::getline(in, b);
  EXPECT_EQ(a, "to-file");
  EXPECT_EQ(b, "err");
}

// A descriptor of ours without O_CLOEXEC (say, the server's listening socket) must not live on in a daemon.
TEST(MpsCommand, DoesNotLeakDescriptors) {
  // Deliberately without O_CLOEXEC, and high: `ls` opens a descriptor of its own (the lowest free one).
  const int null_fd = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(null_fd, 0);
  const int fd = ::dup2(null_fd, 100);
  ::close(null_fd);
  ASSERT_EQ(fd, 100);
  const CommandResult r = run_command({{"/bin/ls", "/proc/self/fd"}, {}, "", "", 5s});
  ::close(fd);
  EXPECT_EQ(r.exit_code, 0);
  std::map<int, bool> open_fds;
  std::stringstream ss(r.output);
  for (int n; ss >> n;) open_fds[n] = true;
  EXPECT_FALSE(open_fds.count(fd)) << r.output;
  EXPECT_TRUE(open_fds.count(0) && open_fds.count(1) && open_fds.count(2)) << r.output;
}

TEST(MpsCommand, AProgramThatCannotStartIsAnError) {
  const std::string msg = error_of(
      [] {
        run_command({{"/nonexistent/program"}, {}, "", "", 1s});
      },
      ErrorCode::kUnavailable);
  EXPECT_TRUE(contains(msg, "cannot run /nonexistent/program")) << msg;
}

}  // namespace
}  // namespace steno::serve::fleet
