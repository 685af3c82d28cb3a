// CUDA MPS for the `mps` sharing mode: worker processes of one GPU share it through an MPS daemon that steno
// starts (private pipe and log directories, stopped and removed at exit) or joins (one already running, given its
// pipe directory). docs/architecture.md has how the modes differ and what was measured of them.
//
// Lifecycle, for the supervisor:
//   1. MpsDaemon::open() before any worker starts (a process connects to MPS when it initialises CUDA, and runs
//      without MPS, silently, if no daemon answers then).
//   2. Each worker is started with worker_env(i, n) added to its environment.
//   3. After a fatal GPU fault in one client, MPS reports the fault to every client on that GPU and its server
//      goes to FAULT, refusing new clients (CUDA error 807, "MPS server not ready") until every affected client
//      has exited. So the supervisor ends the whole group, then calls restart() before starting workers again.
//   4. Workers are stopped before the MpsDaemon is destroyed: `quit` waits for the daemon's clients to exit.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace steno::serve::fleet {

// Environment variables to add to a process's environment (name, value).
using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct MpsOptions {
  // Join the daemon already running on `pipe_dir` instead of starting one.
  bool join_existing = false;
  // Join: the running daemon's CUDA_MPS_PIPE_DIRECTORY (required). Start: empty makes a private directory under
  // `private_dir_parent`; a given one is created if missing and kept at exit.
  std::string pipe_dir;
  // Start: CUDA_MPS_LOG_DIRECTORY, like pipe_dir. Join: the daemon's, if known (only passed on to workers).
  std::string log_dir;
  std::string private_dir_parent = "/tmp";
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of each worker, 1..100 (a cap on its SMs, not a reservation);
  // 0: 100 / workers, rounded.
  int active_thread_percentage = 0;
  // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT of each worker: "dev=limit[,dev=limit...]" as MPS documents it ("0=8G",
  // "0=1G,1=512MB"), or a bare limit ("8G") for `device`. Empty: no limit.
  std::string pinned_device_mem_limit;
  int device = 0;  // the GPU the workers use (for a bare pinned limit)
  // nvidia-cuda-mps-control; empty: looked up on PATH, then in /usr/local/nvidia/bin (the GPU machine's place).
  std::string control_binary;
  // Bound on each control command and on the daemon's start and stop; restart() waits up to 6 times this for a
  // joined daemon's server to recover.
  std::chrono::milliseconds timeout{10'000};
};

// 100 / workers rounded to the nearest integer (at least 1) when `configured` is 0, else `configured` (checked to
// be in 1..100). MPS rounds a percentage down to what the hardware can do (25 % of an H200 gives 32 SMs).
int mps_thread_percentage(int configured, int workers);

// `spec` in CUDA_MPS_PINNED_DEVICE_MEM_LIMIT's format ("0=8G,1=512MB"); a bare limit ("8G") applies to `device`.
// Throws kInvalidArgument for anything else.
std::string mps_pinned_limit(const std::string& spec, int device);

// What worker `worker` of `workers` on GPU `device` (-1: options.device) needs in its environment to be a client of
// the daemon at `pipe_dir` (the log directory is left out when empty).
EnvVars mps_worker_env(const MpsOptions& options, const std::string& pipe_dir, const std::string& log_dir,
                       int worker, int workers, int device = -1);

// The nvidia-cuda-mps-control to run: `configured` if given (it must exist and be executable), else the first on
// PATH, else /usr/local/nvidia/bin's. Throws kUnavailable saying where it looked.
std::string find_mps_control(const std::string& configured);

enum class MpsState {
  kReady,       // the daemon answers and no server is in FAULT
  kFault,       // a server is in FAULT: new clients are refused until every client of it has exited
  kDown,        // the daemon does not answer (or has exited)
  kRestarting,  // restart() is running
};
const char* mps_state_name(MpsState state);

struct MpsStatus {
  MpsState state = MpsState::kDown;
  std::string text;  // one line for logs: daemon, pipe directory, servers and their states
  int servers = 0;   // MPS servers running (one per user that has clients)
};

class MpsDaemon {
 public:
  // Joins (options.join_existing) or starts a daemon. Throws kUnavailable when MPS cannot be had here, with what
  // was tried and how to fix it: no control binary, a build without CUDA or no GPU, a join target without a
  // control pipe or whose daemon does not answer, a daemon that does not start (its log's tail is quoted).
  static std::unique_ptr<MpsDaemon> open(MpsOptions options);
  // Stops the daemon steno started (quit, bounded wait, then signals) and removes the directories it created.
  // A joined daemon is left running.
  ~MpsDaemon();
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;

  EnvVars worker_env(int worker, int workers, int device = -1) const;  // mps_worker_env

  // After a fatal fault, once every worker of the group has exited. Started by steno: quit and start again on
  // the same directories (so worker_env() stays valid). Joined: waits until no server is in FAULT (the server
  // recovers when all its clients have exited; clients outside steno may delay that). Throws kUnavailable when
  // the daemon does not come back within the bound.
  void restart();

  // The daemon's state now (runs control commands; a few milliseconds). Thread-safe; reports kRestarting rather
  // than waiting while restart() runs.
  MpsStatus status() const;

  bool owned() const { return owned_; }
  const std::string& pipe_dir() const { return pipe_dir_; }
  const std::string& log_dir() const { return log_dir_; }

 private:
  MpsDaemon(MpsOptions options, std::string control, bool owned);
  void start();  // with mu_ held
  void stop();   // with mu_ held; leaves the directories
  void remove_created_dirs();
  // Runs one control command ("get_server_list") against this daemon; throws kUnavailable if it fails.
  std::string control(const std::string& command) const;
  MpsStatus status_locked() const;

  MpsOptions options_;
  std::string control_;  // the control binary
  bool owned_;
  std::string pipe_dir_, log_dir_;
  std::vector<std::string> created_dirs_;  // removed at exit, deepest first
  bool started_ = false;                    // a daemon of ours may be running (stop() quits only that one)
  int daemon_pid_ = -1;                     // the started daemon's pid (from its pid file); -1 when joined
  mutable std::mutex mu_;
};

}  // namespace steno::serve::fleet
