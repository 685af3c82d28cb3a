// The autoscaler's settings from a fleet plan, against figures computed by hand (each case's comment shows the
// sum), and the Kustomize overlay they are written into.
#include "steno/bench/autoscale_plan.h"

#include <gtest/gtest.h>

#include "steno/bench/kustomize_overlay.h"
#include "steno/core/error.h"

namespace steno::bench {
namespace {

// The case study's traffic: 2.4 M consultations a week, 25 requests each, peak 3x, on a GPU serving `capacity`.
Plan case_study(double capacity) {
  PlanInput in;
  in.items_per_week = 2400000;
  in.requests_per_item = 25;
  in.capacity_requests_per_s = capacity;
  return plan_fleet(in);
}

LoadPoint capacity_point(double mean_ms, double queue_ms) {
  LoadPoint p;
  p.load = 100;
  p.requests_per_s = 318.8;
  p.mean_ms = mean_ms;
  p.p99_ms = mean_ms * 1.2;
  p.ok = 9564;
  p.server_queue_ms = queue_ms;
  return p;
}

TEST(AutoscalePlan, FloorFromTheAverageCeilingFromThePeakTargetFromTheSlo) {
  const Plan fleet = case_study(92.1);  // the case study's L40S figure: 4 GPUs at the peak
  AutoscaleInput in;
  in.capacity_point = capacity_point(314.4, 85.2);
  const AutoscalePlan a = plan_autoscaling(fleet, 0.2, in);
  EXPECT_EQ(a.min_replicas, 2);  // ceil(99.21 / 92.1 x 1.2) = ceil(1.293)
  EXPECT_EQ(a.max_replicas, 4);
  EXPECT_NEAR(a.outside_queue_ms, 229.2, 1e-9);  // 314.4 - 85.2
  EXPECT_EQ(a.queue_target_us, 420800);          // (650 - 229.2) ms
  ASSERT_EQ(a.arithmetic.size(), 4u);
  EXPECT_EQ(a.arithmetic[0], "replica floor: max(1, ceil(99.21 average requests/s / 92.1 x (1 + 0.2 headroom))) = "
                             "max(1, ceil(1.293)) = 2");
  EXPECT_EQ(a.arithmetic[3], "queue-time target: SLO mean 650 ms - 229.2 ms = 420.8 ms = 420800 us");
}

TEST(AutoscalePlan, MinReplicasRaisesTheFloorAndAGivenComputeTimeWins) {
  const Plan fleet = case_study(318.8);  // 2 GPUs at the peak, 1 at the average
  AutoscaleInput in;
  in.min_replicas = 2;
  in.capacity_point = capacity_point(314.4, 85.2);
  in.outside_queue_ms = 150;
  in.slo_mean_ms = 400;
  const AutoscalePlan a = plan_autoscaling(fleet, 0.2, in);
  EXPECT_EQ(a.min_replicas, 2);
  EXPECT_EQ(a.max_replicas, 2);
  EXPECT_EQ(a.queue_target_us, 250000);  // 400 - 150 ms
  EXPECT_EQ(a.arithmetic[2], "time outside the queue: 150 ms (given)");
}

TEST(AutoscalePlan, APeakWithoutAnAverageTakesTheGivenFloor) {
  PlanInput p;
  p.peak_requests_per_s = 30;
  p.capacity_requests_per_s = 12;
  const Plan fleet = plan_fleet(p);  // ceil(30 / 12 x 1.2) = 3
  AutoscaleInput in;
  in.outside_queue_ms = 100;
  const AutoscalePlan a = plan_autoscaling(fleet, 0.2, in);
  EXPECT_EQ(a.min_replicas, 1);
  EXPECT_EQ(a.max_replicas, 3);
  in.min_replicas = 5;  // a floor above the ceiling lifts the ceiling with it
  const AutoscalePlan b = plan_autoscaling(fleet, 0.2, in);
  EXPECT_EQ(b.min_replicas, 5);
  EXPECT_EQ(b.max_replicas, 5);
}

TEST(AutoscalePlan, RefusesWhatGivesNoTarget) {
  const Plan fleet = case_study(92.1);
  AutoscaleInput none;  // neither a point with the server's queue time nor a given compute time
  EXPECT_THROW(plan_autoscaling(fleet, 0.2, none), Error);
  LoadPoint without_queue = capacity_point(314.4, 0);
  without_queue.server_queue_ms.reset();
  none.capacity_point = without_queue;
  EXPECT_THROW(plan_autoscaling(fleet, 0.2, none), Error);
  AutoscaleInput slow;
  slow.outside_queue_ms = 700;  // more than the SLO's 650 ms mean: nothing left for the queue
  EXPECT_THROW(plan_autoscaling(fleet, 0.2, slow), Error);
  AutoscaleInput zero_floor;
  zero_floor.outside_queue_ms = 100;
  zero_floor.min_replicas = 0;
  EXPECT_THROW(plan_autoscaling(fleet, 0.2, zero_floor), Error);
}

TEST(KustomizeOverlay, PatchesTheFloorCeilingAndThresholdUnderItsArithmetic) {
  AutoscalePlan a;
  a.min_replicas = 2;
  a.max_replicas = 4;
  a.queue_target_us = 420800;
  const std::string yaml = kustomize_autoscale_overlay(a, OverlayTarget{}, {"peak load: 297.6 requests/s", ""});
  EXPECT_NE(yaml.find("# peak load: 297.6 requests/s\n#\napiVersion: kustomize.config.k8s.io/v1beta1\n"),
            std::string::npos) << yaml;
  EXPECT_NE(yaml.find("resources:\n  - \"../keda\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("path: /spec/replicas\n        value: 2\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("path: /spec/minReplicaCount\n        value: 2\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("path: /spec/maxReplicaCount\n        value: 4\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("path: /spec/triggers/0/metadata/threshold\n        value: \"420800\"\n"), std::string::npos)
      << yaml;
  // A path or name with YAML's special characters stays one quoted scalar.
  const std::string odd = kustomize_autoscale_overlay(a, OverlayTarget{"../a: b\n#c", "x\"y"}, {});
  EXPECT_NE(odd.find("  - \"../a: b\\n#c\"\n"), std::string::npos) << odd;
  EXPECT_NE(odd.find("name: \"x\\\"y\"\n"), std::string::npos) << odd;
}

}  // namespace
}  // namespace steno::bench
