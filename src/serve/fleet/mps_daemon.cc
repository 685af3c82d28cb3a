// The MPS control daemon: found, started or joined, watched, restarted after a fault, stopped (mps.h).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "mps_command.h"
#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "serve/fleet/mps.h"

namespace steno::serve::fleet {
namespace fs = std::filesystem;
namespace {

constexpr const char* kControlName = "nvidia-cuda-mps-control";
constexpr const char* kGpuMachineControl = "/usr/local/nvidia/bin/nvidia-cuda-mps-control";
constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";  // written by the daemon into its pipe directory
constexpr auto kPoll = std::chrono::milliseconds(50);

bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The last `max_bytes` of a log file, on one line, or "(empty)" / "(none)".
std::string log_tail(const fs::path& path, size_t max_bytes = 1500) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "(none)";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.size() > max_bytes) text = "..." + text.substr(text.size() - max_bytes);
  for (char& c : text)
    if (c == '\n') c = '|';
  text = trimmed(text);
  return text.empty() ? "(empty)" : text;
}

bool alive(int pid) {
  ::waitpid(pid, nullptr, WNOHANG);  // reaps it if it happens to be our child (a subreaper's); ECHILD otherwise
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

bool wait_gone(int pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPoll / 2);
  }
  return true;
}

int read_pid(const fs::path& pid_file) {
  std::ifstream in(pid_file);
  int pid = -1;
  return (in >> pid) && pid > 0 ? pid : -1;
}

// Makes `dir` and its missing parents; the ones made are appended to `made` (deepest last).
void make_dirs(const fs::path& dir, std::vector<std::string>& made) {
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty() && !fs::exists(p); p = p.parent_path()) missing.push_back(p);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST)
      fail(ErrorCode::kUnavailable, "cannot create the MPS directory {}: {}", it->string(), std::strerror(errno));
    made.push_back(it->string());
  }
}

}  // namespace

const char* mps_state_name(MpsState state) {
  switch (state) {
    case MpsState::kReady: return "ready";
    case MpsState::kFault: return "fault";
    case MpsState::kDown: return "down";
    case MpsState::kRestarting: return "restarting";
  }
  return "unknown";
}

std::string find_mps_control(const std::string& configured) {
  if (!configured.empty()) {
    if (!fs::exists(configured))
      fail(ErrorCode::kUnavailable, "the MPS control binary {} does not exist: give the path of {}, which comes "
           "with the NVIDIA driver", configured, kControlName);
    if (!executable_file(configured))
      fail(ErrorCode::kUnavailable, "the MPS control binary {} is not an executable file", configured);
    return configured;
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    const std::string candidate = (fs::path(dir) / kControlName).string();
    if (executable_file(candidate)) return candidate;
  }
  if (executable_file(kGpuMachineControl)) return kGpuMachineControl;
  fail(ErrorCode::kUnavailable, "{} was found neither on PATH ({}) nor at {}: MPS needs the NVIDIA driver's MPS "
       "binaries; install them or give the control binary's path", kControlName, path.empty() ? "empty" : path,
       kGpuMachineControl);
}

MpsDaemon::MpsDaemon(MpsOptions options, std::string control, bool owned)
    : options_(std::move(options)), control_(std::move(control)), owned_(owned) {}

std::unique_ptr<MpsDaemon> MpsDaemon::open(MpsOptions options) {
  STENO_CHECK(options.timeout.count() > 0, "the MPS timeout must be positive");
  if (options.join_existing)
    STENO_CHECK(!options.pipe_dir.empty(), "joining an MPS daemon needs its pipe directory (its "
                "CUDA_MPS_PIPE_DIRECTORY)");
  // Everything that rules MPS out, in one message, so that one attempt tells the whole story.
  std::vector<std::string> problems;
  std::string control;
  try {
    control = find_mps_control(options.control_binary);
  } catch (const Error& e) {
    problems.emplace_back(e.what());
  }
  if (!steno::cuda::built())
    problems.emplace_back("this steno was built without CUDA (configure with -DSTENO_WITH_CUDA=ON)");
  else if (steno::cuda::device_count() == 0)
    problems.emplace_back("no CUDA GPU is visible to this process (no NVIDIA driver, or no device)");
  const fs::path join_pipe = fs::path(options.pipe_dir) / "control";
  if (options.join_existing && !fs::exists(join_pipe))
    problems.push_back(fmt::format("there is no MPS control pipe {}, so no daemon runs with "
                                   "CUDA_MPS_PIPE_DIRECTORY={} (start one there with `{} -d`, or let steno start "
                                   "its own)", join_pipe.string(), options.pipe_dir, kControlName));
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
    fail(ErrorCode::kUnavailable, "MPS was asked for but cannot be had here: {}. MPS needs an NVIDIA GPU with its "
         "driver and the driver's MPS binaries; without them, share the GPU by processes or lanes instead", all);
  }

  const bool owned = !options.join_existing;
  std::unique_ptr<MpsDaemon> d(new MpsDaemon(std::move(options), std::move(control), owned));
  std::lock_guard lock(d->mu_);
  if (!owned) {
    d->pipe_dir_ = d->options_.pipe_dir;
    d->log_dir_ = d->options_.log_dir;
    d->control("get_server_list");  // throws kUnavailable when the daemon does not answer
    spdlog::info("joined the MPS daemon on {}", d->pipe_dir_);
    return d;
  }
  // From here on, a failure destroys `d`, which stops what was started and removes what was created.
  if (d->options_.pipe_dir.empty() || d->options_.log_dir.empty()) {
    std::string root = (fs::path(d->options_.private_dir_parent) / "steno-mps-XXXXXX").string();
    if (::mkdtemp(root.data()) == nullptr)
      fail(ErrorCode::kUnavailable, "cannot create a private MPS directory in {}: {}",
           d->options_.private_dir_parent, std::strerror(errno));
    d->created_dirs_.push_back(root);
    d->pipe_dir_ = d->options_.pipe_dir.empty() ? root + "/pipe" : d->options_.pipe_dir;
    d->log_dir_ = d->options_.log_dir.empty() ? root + "/log" : d->options_.log_dir;
  } else {
    d->pipe_dir_ = d->options_.pipe_dir;
    d->log_dir_ = d->options_.log_dir;
  }
  make_dirs(d->pipe_dir_, d->created_dirs_);
  make_dirs(d->log_dir_, d->created_dirs_);
  if (fs::exists(fs::path(d->pipe_dir_) / "control")) {
    bool answers = true;
    try {
      d->control("get_server_list");
    } catch (const Error&) {
      answers = false;  // a stale pipe of a daemon that died: the new one replaces it
    }
    if (answers)
      fail(ErrorCode::kUnavailable, "an MPS daemon already runs on {}: join it instead of starting one, or use "
           "another pipe directory", d->pipe_dir_);
  }
  d->start();
  return d;
}

MpsDaemon::~MpsDaemon() {
  std::lock_guard lock(mu_);
  try {
    stop();
  } catch (const std::exception& e) {
    spdlog::error("stopping the MPS daemon: {}", e.what());
  }
  remove_created_dirs();
}

EnvVars MpsDaemon::worker_env(int worker, int workers, int device) const {
  return mps_worker_env(options_, pipe_dir_, log_dir_, worker, workers, device);
}

void MpsDaemon::start() {
  const fs::path pipe(pipe_dir_), log(log_dir_);
  const fs::path start_out = log / "steno-mps-control-start.out";
  // The launcher forks the daemon and exits; the daemon inherits its stdout, so that goes to a file, not a pipe.
  const CommandResult r = run_command({{control_, "-d"},
                                       {{"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_}, {"CUDA_MPS_LOG_DIRECTORY", log_dir_}},
                                       "",
                                       start_out.string(),
                                       options_.timeout});
  started_ = true;  // from here on there may be a daemon of ours to stop, even if it never answers
  auto failed = [&](const std::string& why) {
    fail(ErrorCode::kUnavailable, "the MPS daemon did not start: {}. Its output: {}; its log ({}): {}. The daemon "
         "may need root (it runs as root on the project's H200) and a GPU whose compute mode allows it (Default or "
         "EXCLUSIVE_PROCESS)", why, log_tail(start_out), (log / "control.log").string(),
         log_tail(log / "control.log"));
  };
  if (r.timed_out) failed(fmt::format("`{} -d` did not return within {} ms", control_, options_.timeout.count()));
  if (r.exit_code != 0) failed(fmt::format("`{} -d` exited with status {}", control_, r.exit_code));

  // Up when its pid file is written and it answers on its control pipe.
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  std::string last_error = "no control pipe yet";
  for (;;) {
    daemon_pid_ = read_pid(pipe / kPidFile);
    if (daemon_pid_ > 0 && fs::exists(pipe / "control")) {
      try {
        control("get_server_list");
        break;
      } catch (const Error& e) {
        last_error = e.what();
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      failed(fmt::format("it did not answer within {} ms ({})", options_.timeout.count(), last_error));
    std::this_thread::sleep_for(kPoll);
  }
  spdlog::info("started the MPS daemon (pid {}; pipe {}, log {})", daemon_pid_, pipe_dir_, log_dir_);
}

void MpsDaemon::stop() {
  if (!owned_ || !started_) return;  // never `quit` a daemon that steno did not start
  // `quit` stops the servers and the daemon; it waits for clients still connected (the workers are stopped
  // first). A daemon that does not go within the bound is signalled: it is ours.
  try {
    control("quit");
  } catch (const Error& e) {
    spdlog::warn("MPS daemon on {}: quit failed: {}", pipe_dir_, e.what());
  }
  if (daemon_pid_ > 0 && !wait_gone(daemon_pid_, options_.timeout)) {
    spdlog::warn("MPS daemon pid {} did not quit within {} ms: terminating it (its servers may linger)",
                 daemon_pid_, options_.timeout.count());
    ::kill(daemon_pid_, SIGTERM);
    if (!wait_gone(daemon_pid_, std::chrono::seconds(2))) {
      ::kill(daemon_pid_, SIGKILL);
      wait_gone(daemon_pid_, std::chrono::seconds(2));
    }
  }
  if (daemon_pid_ > 0) spdlog::info("stopped the MPS daemon (pid {})", daemon_pid_);
  daemon_pid_ = -1;
  started_ = false;
}

void MpsDaemon::remove_created_dirs() {
  // Deepest first; a private root takes everything in it along.
  for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) {
    std::error_code ec;
    fs::remove_all(*it, ec);
    if (ec) spdlog::warn("could not remove the MPS directory {}: {}", *it, ec.message());
  }
  created_dirs_.clear();
}

void MpsDaemon::restart() {
  std::lock_guard lock(mu_);
  if (owned_) {
    spdlog::warn("restarting the MPS daemon on {} after a fault", pipe_dir_);
    stop();
    start();
    return;
  }
  // Not ours to restart: after a fatal fault its server stays in FAULT until every client it had has exited,
  // then recovers by itself (MPS on Volta and later).
  const auto bound = options_.timeout * 6;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    const MpsStatus s = status_locked();
    if (s.state == MpsState::kReady) {
      spdlog::info("the joined MPS daemon is ready again: {}", s.text);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      fail(ErrorCode::kUnavailable, "the joined MPS daemon has not recovered within {} ms: {}. A faulted server "
           "takes clients again only once every client it had has exited, processes outside steno included",
           bound.count(), s.text);
    std::this_thread::sleep_for(kPoll * 4);
  }
}

MpsStatus MpsDaemon::status() const {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return {MpsState::kRestarting, fmt::format("MPS daemon on {}: restarting", pipe_dir_), 0};
  return status_locked();
}

MpsStatus MpsDaemon::status_locked() const {
  MpsStatus st;
  const std::string who =
      owned_ ? fmt::format("MPS daemon pid {} (started by steno)", daemon_pid_) : std::string("MPS daemon (joined)");
  if (owned_ && (daemon_pid_ <= 0 || !alive(daemon_pid_))) {
    st.text = fmt::format("{} on {}: not running", who, pipe_dir_);
    return st;
  }
  std::string list;
  try {
    list = control("get_server_list");
  } catch (const Error& e) {
    st.text = fmt::format("{} on {}: {}", who, pipe_dir_, e.what());
    return st;
  }
  std::string servers;
  bool fault = false;
  std::stringstream pids(list);
  for (std::string pid; pids >> pid;) {
    if (!std::all_of(pid.begin(), pid.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      continue;
    std::string state;
    try {
      state = trimmed(control("get_server_status " + pid));
    } catch (const Error& e) {
      state = "unknown";
    }
    std::string upper = state;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    fault = fault || upper.find("FAULT") != std::string::npos;
    servers += fmt::format("{}{} {}", servers.empty() ? "" : ", ", pid, state);
    ++st.servers;
  }
  st.state = fault ? MpsState::kFault : MpsState::kReady;
  st.text = fmt::format("{} on {}: {} server(s){}{}", who, pipe_dir_, st.servers, servers.empty() ? "" : ": ",
                        servers);
  return st;
}

std::string MpsDaemon::control(const std::string& command) const {
  EnvVars env{{"CUDA_MPS_PIPE_DIRECTORY", pipe_dir_}};
  if (!log_dir_.empty()) env.emplace_back("CUDA_MPS_LOG_DIRECTORY", log_dir_);
  const CommandResult r = run_command({{control_}, env, command + "\n", "", options_.timeout});
  const std::string out = trimmed(r.output);
  if (r.timed_out)
    fail(ErrorCode::kUnavailable, "MPS control command '{}' on {} did not answer within {} ms", command, pipe_dir_,
         options_.timeout.count());
  // Without a daemon the control binary says so ("Cannot find MPS control daemon process").
  if (r.exit_code != 0 || out.find("Cannot find MPS control daemon") != std::string::npos)
    fail(ErrorCode::kUnavailable, "MPS control command '{}' on {} failed (exit status {}): {}", command, pipe_dir_,
         r.exit_code, out.empty() ? "no output" : out);
  return out;
}

}  // namespace steno::serve::fleet
