// A few threads that run CPU work posted to them in order: the front ends' handlers that parse large bodies or
// decode audio, so that this work never stalls their I/O threads (HTTP) or RPC callback threads (gRPC), and with
// them every other connection, health probes included; and the inference core's voice activity detection, so that
// an hour's VAD never holds a front end's thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace steno::serve {

class WorkPool {
 public:
  explicit WorkPool(int threads);
  ~WorkPool();  // runs what is queued, then joins
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void post(std::function<void()> task);

 private:
  void run();
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace steno::serve
