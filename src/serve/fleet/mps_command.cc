#include "mps_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "steno/core/error.h"

extern char** environ;

namespace steno::serve::fleet {
namespace {

constexpr size_t kMaxOutput = 64 * 1024;

// Closes what it holds at scope exit; a tiny local owner (fleet's UniqueFd belongs to the worker code).
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::vector<std::string> merged_environment(const EnvVars& extra) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) vars[k] = v;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [k, v] : vars) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Writes `input` to `fd` without letting a child that exits early kill us with SIGPIPE: the signal is blocked on
// this thread for the write, and a pending one is consumed.
void write_input(int fd, const std::string& input) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  size_t done = 0;
  bool broken = false;
  while (done < input.size()) {
    const ssize_t n = ::write(fd, input.data() + done, input.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken = errno == EPIPE;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (broken) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Reads what the (non-blocking) pipe holds; true at EOF.
bool read_available(int fd, std::string& out) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return true;
    if (n < 0) return false;  // EAGAIN: nothing more for now
    const size_t room = kMaxOutput - std::min(kMaxOutput, out.size());
    out.append(buf, std::min(room, static_cast<size_t>(n)));
  }
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

CommandResult run_command(const CommandSpec& spec) {
  STENO_CHECK(!spec.argv.empty(), "run_command needs a program");
  Fd in_r, in_w, out_r, out_w;
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) fail(ErrorCode::kUnavailable, "pipe2: {}", std::strerror(errno));
  in_r.fd = p[0];
  in_w.fd = p[1];
  if (spec.output_file.empty()) {
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) fail(ErrorCode::kUnavailable, "pipe2: {}", std::strerror(errno));
    out_r.fd = p[0];
    out_w.fd = p[1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_r.fd, 0);
  if (spec.output_file.empty()) {
    posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
    posix_spawn_file_actions_adddup2(&actions, out_w.fd, 2);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, spec.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  // Descriptors of ours without O_CLOEXEC (a listening socket) must not live on in a daemon.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> args = spec.argv;
  std::vector<std::string> env = merged_environment(spec.env);
  std::vector<char*> argv = c_strings(args);
  std::vector<char*> envp = c_strings(env);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) fail(ErrorCode::kUnavailable, "cannot run {}: {}", spec.argv[0], std::strerror(err));
  in_r.reset();
  out_w.reset();

  write_input(in_w.fd, spec.input);
  in_w.reset();

  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + spec.timeout;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      // Exited: take what is already in the pipe, without waiting for an EOF that a daemonized grandchild
      // holding the pipe's other end would postpone indefinitely.
      if (out_r.fd >= 0) read_available(out_r.fd, result.output);
      result.exit_code = exit_code(status);
      return result;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    if (out_r.fd >= 0) {
      pollfd pfd{out_r.fd, POLLIN, 0};
      // At EOF the process has closed its output but runs on: stop polling a descriptor that stays readable.
      if (::poll(&pfd, 1, 20) > 0 && read_available(out_r.fd, result.output)) out_r.reset();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (out_r.fd >= 0) read_available(out_r.fd, result.output);
  result.timed_out = true;
  result.exit_code = -1;
  return result;
}

}  // namespace steno::serve::fleet
