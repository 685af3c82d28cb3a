// MpsMonitor publishes the state it is given into a real Prometheus registry and follows its changes; a status
// that throws reads as `down`. (The states come from a function here: on the GPU machine it is MpsDaemon::status,
// exercised by mps_gpu_test.)
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "serve/fleet/mps_monitor.h"

namespace steno::serve::fleet {
namespace {

std::string render(prometheus::Registry& r) { return prometheus::TextSerializer().Serialize(r.Collect()); }

TEST(MpsMonitor, PublishesTheCurrentStateAndFollowsChanges) {
  prometheus::Registry registry;
  std::atomic<int> phase{0};
  auto status = [&] {
    if (phase == 2) throw std::runtime_error("control pipe gone");
    MpsStatus s;
    s.state = phase == 0 ? MpsState::kReady : MpsState::kFault;
    s.servers = phase == 0 ? 1 : 2;
    s.text = "test";
    return s;
  };
  MpsMonitor monitor(status, registry, std::chrono::milliseconds(10));
  std::string text = render(registry);  // the first state is there before the constructor returns
  EXPECT_NE(text.find("steno_mps_state{state=\"ready\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("steno_mps_state{state=\"fault\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("steno_mps_servers 1"), std::string::npos) << text;

  auto wait_for = [&](const std::string& line) {
    for (int i = 0; i < 500; ++i) {
      if (render(registry).find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  phase = 1;
  EXPECT_TRUE(wait_for("steno_mps_state{state=\"fault\"} 1")) << render(registry);
  EXPECT_NE(render(registry).find("steno_mps_state{state=\"ready\"} 0"), std::string::npos);
  EXPECT_NE(render(registry).find("steno_mps_servers 2"), std::string::npos);
  phase = 2;
  EXPECT_TRUE(wait_for("steno_mps_state{state=\"down\"} 1")) << render(registry);
}

}  // namespace
}  // namespace steno::serve::fleet
