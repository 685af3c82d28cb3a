// Running the MPS control binary: posix_spawn with an argument vector (no shell, so no quoting or injection),
// input on stdin, output captured, and a bounded wait that kills what overstays. Private to the MPS code.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "serve/fleet/mps.h"

namespace steno::serve::fleet {

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is the program's path (not looked up on PATH)
  EnvVars env;                    // added to this process's environment, replacing variables of the same name
  std::string input;              // written to stdin, which is then closed
  // Empty: stdout and stderr are captured into CommandResult::output. Else they are appended to this file: for
  // a program that daemonizes, whose daemon would otherwise keep (and later write into) our pipe.
  std::string output_file;
  std::chrono::milliseconds timeout{10'000};
};

struct CommandResult {
  int exit_code = -1;  // the exit status; 128 + signal when killed by one; -1 when timed out
  bool timed_out = false;
  std::string output;  // stdout and stderr interleaved (at most 64 KiB)
};

// Runs the command and waits for it to exit, at most spec.timeout (then SIGKILL). It returns when the process
// exits even if something it started still holds the output pipe. The child gets its own process group (a Ctrl-C
// meant for steno does not reach it), default signal dispositions and mask, and no descriptor of ours beyond
// 0-2. Throws kUnavailable when the program cannot be started.
CommandResult run_command(const CommandSpec& spec);

}  // namespace steno::serve::fleet
