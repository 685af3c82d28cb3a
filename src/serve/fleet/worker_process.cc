#include "serve/fleet/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

extern char** environ;

namespace steno::serve::fleet {
namespace {

// argv or envp for execve: the strings stay owned here, the pointer array ends with null.
class CStrings {
 public:
  void add(std::string s) { strings_.push_back(std::move(s)); }
  char* const* get() {
    pointers_.clear();
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
    return pointers_.data();
  }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

CStrings environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
  CStrings env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [k, v] : overrides) overridden = overridden || k == name;
    if (!overridden) env.add(std::string(entry));
  }
  for (const auto& [k, v] : overrides) env.add(k + "=" + v);
  return env;
}

// The first descriptor the worker does not inherit.
constexpr int kFirstClosedFd = kWorkerWeightsFd + 1;

// In the child between fork and exec: async-signal-safe calls only (the server has many threads).
[[noreturn]] void exec_child(pid_t parent, int socket_fd, int weights_fd, const char* executable, char* const* argv,
                             char* const* envp) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);  // the server blocks SIGTERM/SIGINT for its sigwait()
  setpgid(0, 0);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);  // the server already died
  // Both descriptors first above the numbers they go to, so that placing one cannot close the other; then each
  // dup2'd to its number (a copy made by dup2 does not inherit close-on-exec).
  if (socket_fd < kFirstClosedFd && (socket_fd = fcntl(socket_fd, F_DUPFD, kFirstClosedFd)) < 0) _exit(127);
  if (weights_fd >= 0 && weights_fd < kFirstClosedFd && (weights_fd = fcntl(weights_fd, F_DUPFD, kFirstClosedFd)) < 0)
    _exit(127);
  if (dup2(socket_fd, kWorkerSocketFd) < 0) _exit(127);
  if (weights_fd >= 0 && dup2(weights_fd, kWorkerWeightsFd) < 0) _exit(127);
  // Listening sockets and client connections must not live on in the worker.
  if (syscall(SYS_close_range, kFirstClosedFd, UINT_MAX, 0) != 0)
    for (int fd = kFirstClosedFd; fd < 65536; ++fd) close(fd);
  execve(executable, argv, envp);
  _exit(127);
}

ExitStatus to_exit_status(int status) {
  if (WIFSIGNALED(status)) return ExitStatus{true, WTERMSIG(status)};
  return ExitStatus{false, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace

std::string ExitStatus::str() const {
  if (signaled) return fmt::format("signal {} ({})", code, strsignal(code));
  return fmt::format("exit status {}", code);
}

WorkerProcess::WorkerProcess(pid_t pid, UniqueFd socket) : pid_(pid), socket_(std::move(socket), kMaxResultPayload) {}

std::unique_ptr<WorkerProcess> WorkerProcess::spawn(const WorkerLaunch& launch) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    fail(ErrorCode::kUnavailable, "socketpair for a worker: {}", std::strerror(errno));
  UniqueFd server_end(sv[0]), worker_end(sv[1]);

  // Everything the child needs is prepared before fork: it may not allocate.
  CStrings argv;
  argv.add("steno");
  for (const std::string& a : launch.args) argv.add(a);
  CStrings envp = environment(launch.env);
  char* const* argv_p = argv.get();
  char* const* envp_p = envp.get();
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) fail(ErrorCode::kUnavailable, "fork for a worker: {}", std::strerror(errno));
  if (pid == 0) exec_child(parent, worker_end.get(), launch.weights_fd, launch.executable.c_str(), argv_p, envp_p);
  return std::unique_ptr<WorkerProcess>(new WorkerProcess(pid, std::move(server_end)));
}

WorkerProcess::~WorkerProcess() {
  if (!reaped()) kill_and_reap();
}

void WorkerProcess::kill(int signal) {
  if (!reaped()) ::kill(pid_, signal);
}

std::optional<ExitStatus> WorkerProcess::wait(std::chrono::milliseconds timeout) {
  if (status_) return status_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = to_exit_status(status);
      return status_;
    }
    if (r < 0 && errno != EINTR) {  // ECHILD: someone else reaped it; nothing is left to wait for
      status_ = ExitStatus{false, -1};
      return status_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

ExitStatus WorkerProcess::kill_and_reap() {
  kill(SIGKILL);
  // SIGKILL cannot be caught or ignored, and it also ends a stopped process: this wait is short.
  for (;;)
    if (auto s = wait(std::chrono::seconds(1))) return *s;
}

ExitStatus WorkerProcess::stop(std::chrono::milliseconds grace) {
  if (!reaped()) ::shutdown(socket_.fd(), SHUT_RDWR);
  if (auto s = wait(grace)) return *s;
  return kill_and_reap();
}

}  // namespace steno::serve::fleet
