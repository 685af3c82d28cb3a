// One worker process as the server holds it: this same binary (/proc/self/exe) started as `steno ... worker ...`
// by fork + exec, with its end of a socketpair as descriptor 3 (and, with --share-weights, the shared weights'
// memory as descriptor 4; every other descriptor of the server closed), in
// a process group of its own (a terminal's Ctrl-C reaches the server, which drains, not the workers), and with the
// parent-death signal set, so that it dies with the server thread that started it. Destroying the object kills and
// reaps the process: a worker is never left behind, as an orphan or a zombie.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "serve/fleet/framed_socket.h"

namespace steno::serve::fleet {

// The descriptor number the worker finds its socket on.
inline constexpr int kWorkerSocketFd = 3;
// The descriptor number an importing worker finds the shared weights' memory on (shared_weights.h).
inline constexpr int kWorkerWeightsFd = 4;

struct ExitStatus {
  bool signaled = false;
  int code = 0;             // the exit status, or the signal number when signaled
  std::string str() const;  // "exit status 1", "signal 9 (Killed)"
};

struct WorkerLaunch {
  std::string executable = "/proc/self/exe";
  std::vector<std::string> args;                         // argv after argv[0]
  std::vector<std::pair<std::string, std::string>> env;  // set over the server's own environment
  // When >= 0: a descriptor the worker gets as kWorkerWeightsFd (shared_weights.h), the shared weights' memory;
  // it stays the caller's (spawn() only lets the child inherit a copy).
  int weights_fd = -1;
};

class WorkerProcess {
 public:
  // Starts the process. Throws kUnavailable when it cannot (socketpair, fork).
  static std::unique_ptr<WorkerProcess> spawn(const WorkerLaunch& launch);
  ~WorkerProcess();  // SIGKILL and reap if still running
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  FramedSocket& socket() { return socket_; }
  bool reaped() const { return status_.has_value(); }

  // Sends `signal` unless the process has been reaped (its pid may then belong to another process).
  void kill(int signal);
  // Reaps the process if it ends within `timeout`; nullopt while it still runs.
  std::optional<ExitStatus> wait(std::chrono::milliseconds timeout);
  // SIGKILL, then reap.
  ExitStatus kill_and_reap();
  // Shuts the socket down (the worker's next read sees EOF and it exits by itself), waits up to `grace`, then
  // SIGKILLs what is left. Reaps either way.
  ExitStatus stop(std::chrono::milliseconds grace);

 private:
  WorkerProcess(pid_t pid, UniqueFd socket);
  pid_t pid_;
  FramedSocket socket_;
  std::optional<ExitStatus> status_;
};

}  // namespace steno::serve::fleet
