// The real `steno serve` as a background process for tests that drive it over loopback (curl, SDKs): started with
// `--port 0` and the test's arguments, its port read from its log, stopped with SIGTERM when the object goes.
#pragma once

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_util.h"

namespace steno::testing {

class ServeProcess {
 public:
  // `steno [global args] serve --port 0 ARGS`, logging to a file of its own; port() is 0 when it did not start
  // within 30 s (log() says why).
  explicit ServeProcess(const std::string& args, const std::string& global_args = "--log-level info")
      : dir_(std::filesystem::temp_directory_path() /
             ("steno_serve_" + std::to_string(getpid()) + "_" + std::to_string(next_id()))) {
    std::filesystem::create_directories(dir_);
    const std::string cmd = "(" + std::string(STENO_BINARY) + " " + global_args + " serve --port 0 " + args + " 2>" +
                            (dir_ / "log").string() + " & echo $! > " + (dir_ / "pid").string() + "; wait $!) &";
    if (std::system(cmd.c_str()) != 0) return;
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      const std::string text = slurp(dir_ / "log");
      if (const size_t at = text.find("on http://127.0.0.1:"); at != std::string::npos)
        port_ = std::atoi(text.c_str() + at + 20);
      else
        usleep(50000);
    }
  }
  ~ServeProcess() {
    stop();
    std::filesystem::remove_all(dir_);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return slurp(dir_ / "log"); }
  const std::filesystem::path& dir() const { return dir_; }  // a scratch folder, removed with the object

  // SIGTERM, then up to 10 s for the process to exit; whether it did.
  bool stop() {
    pid_t pid = 0;
    std::ifstream(dir_ / "pid") >> pid;
    if (pid <= 0) return false;
    if (kill(pid, 0) != 0) return true;
    kill(pid, SIGTERM);
    for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i) usleep(50000);
    return kill(pid, 0) != 0;
  }

 private:
  static int next_id() {
    static int id = 0;
    return id++;
  }
  std::filesystem::path dir_;
  int port_ = 0;
};

}  // namespace steno::testing
