// The SLO search and the fleet arithmetic against figures computed by hand (each case's comment shows the sum).
#include "steno/bench/capacity_plan.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "steno/core/error.h"

namespace steno::bench {
namespace {

LoadPoint point(double load, double rps, double mean_ms, double p99_ms, int64_t errors = 0) {
  LoadPoint p;
  p.load = load;
  p.requests_per_s = rps;
  p.audio_seconds_per_s = rps * 45;
  p.mean_ms = mean_ms;
  p.p99_ms = p99_ms;
  p.ok = static_cast<int64_t>(rps * 30);
  p.errors = errors;
  return p;
}

TEST(SloSearch, BestLastMeetingAndTheBracket) {
  // Out of order on purpose. c = 16 still meets the SLO but serves less than c = 8 (saturation); c = 32 breaks it.
  const std::vector<LoadPoint> pts = {point(16, 58, 640, 990), point(1, 10, 100, 200), point(32, 55, 1200, 2000),
                                      point(4, 35, 300, 600), point(8, 60, 500, 900)};
  const SloSearch s = search_slo(pts, SloBounds{});
  ASSERT_TRUE(s.best && s.last_meeting && s.first_failing_above);
  EXPECT_EQ(s.best->load, 8);
  EXPECT_EQ(s.best->requests_per_s, 60);
  EXPECT_EQ(s.last_meeting->load, 16);
  EXPECT_EQ(s.first_failing_above->load, 32);
}

TEST(SloSearch, BoundsAreStrictAndErrorsDisqualify) {
  EXPECT_FALSE(meets_slo(point(1, 10, 650, 500), SloBounds{}));   // mean must be below 650, not equal
  EXPECT_FALSE(meets_slo(point(1, 10, 500, 1000), SloBounds{}));  // p99 likewise
  EXPECT_FALSE(meets_slo(point(1, 10, 100, 200, 1), SloBounds{})); // one wrong or failed request
  LoadPoint none = point(1, 0, 0, 0);
  EXPECT_FALSE(meets_slo(none, SloBounds{}));                      // nothing answered
  EXPECT_TRUE(meets_slo(point(1, 10, 649.9, 999.9), SloBounds{}));
  EXPECT_TRUE(meets_slo(point(1, 10, 700, 1100), SloBounds{800, 1200}));  // other bounds
}

TEST(SloSearch, NoPointMeetsAndNothingAboveTheLast) {
  EXPECT_FALSE(search_slo({point(1, 10, 900, 1500)}, SloBounds{}).best);
  const SloSearch s = search_slo({point(1, 10, 100, 200), point(4, 30, 200, 400)}, SloBounds{});
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->load, 4);
  EXPECT_FALSE(s.first_failing_above);  // the sweep never broke the SLO: the capacity may be higher
}

TEST(SloSearch, ReadsSeedLoadAndServeLoadResults) {
  const auto p = [](double c, double rps, double mean, double p99, int wrong) {
    return nlohmann::json{{"concurrency", c}, {"requests_per_s", rps}, {"audio_seconds_per_s", rps * 45},
                          {"ok", 30}, {"wrong", wrong}, {"failed", 0},
                          {"latency_ms", {{"mean", mean}, {"p99", p99}, {"p50", mean}}}};
  };
  const nlohmann::json sweep = {{"points", {p(1, 2, 400, 500, 0), p(4, 7, 560, 700, 0), p(8, 8, 900, 1300, 1)}}};
  for (const nlohmann::json& file : {nlohmann::json{{"sweep", sweep}}, sweep}) {  // seed_load.sh's, serve_load's
    const auto pts = load_points_from_result(file);
    ASSERT_EQ(pts.size(), 3u);
    EXPECT_EQ(pts[2].errors, 1);
    EXPECT_EQ(pts[1].audio_seconds_per_s, 7 * 45);
    const SloSearch s = search_slo(pts, SloBounds{});
    ASSERT_TRUE(s.best);
    EXPECT_EQ(s.best->requests_per_s, 7);
  }
  // An open loop's points carry their arrival rate instead of a concurrency.
  const nlohmann::json open = {{"points", {{{"rate_per_s", 20}, {"requests_per_s", 19.5}, {"ok", 585}, {"wrong", 0},
                                            {"failed", 0}, {"latency_ms", {{"mean", 300}, {"p99", 800}}}}}}};
  EXPECT_EQ(load_points_from_result(open).at(0).load, 20);
  EXPECT_FALSE(load_points_from_result(open).at(0).server_queue_ms);  // no server_metrics: unknown, not 0
  // seed_load.sh's points carry the server's mean queue time (from nv_inference_queue_duration_us).
  nlohmann::json with_server = open;
  with_server["points"][0]["server_metrics"] = {{"queue_ms_mean", 85.2}, {"request_ms_mean", 259.9}};
  EXPECT_EQ(load_points_from_result(with_server).at(0).server_queue_ms, 85.2);
  EXPECT_THROW(load_points_from_result(nlohmann::json{{"load_run", {}}}), Error);  // the all-at-once mode's file
  EXPECT_THROW(load_points_from_result(nlohmann::json{{"points", {{{"concurrency", 1}}}}}), Error);
}

TEST(PlanFleet, PeakGiven) {
  PlanInput in;
  in.peak_requests_per_s = 100;
  in.capacity_requests_per_s = 92.1;
  const Plan p = plan_fleet(in);  // 100 / 92.1 x 1.2 = 1.3029 -> 2
  EXPECT_FALSE(p.average_requests_per_s);  // a peak alone says nothing of the average
  EXPECT_NEAR(p.gpus_exact, 1.30293, 1e-5);
  EXPECT_EQ(p.gpus, 2);
  EXPECT_EQ(p.arithmetic.size(), 3u);
}

TEST(PlanFleet, TheCaseStudysWeeklyVolume) {
  PlanInput in;
  in.items_per_week = 2.4e6;  // consultations a week
  in.capacity_requests_per_s = 92.1;
  // 2,400,000 / 604,800 s = 3.9683 requests/s on average; x 3 = 11.905 at the peak; / 92.1 x 1.2 = 0.1551 -> 1
  Plan p = plan_fleet(in);
  EXPECT_NEAR(*p.average_requests_per_s, 3.9683, 1e-4);
  EXPECT_NEAR(p.peak_requests_per_s, 11.9048, 1e-4);
  EXPECT_EQ(p.gpus, 1);
  // Each consultation sent as 40 requests (e.g. 20 minutes in 30 s parts): 476.19 / 92.1 x 1.2 = 6.2045 -> 7
  in.requests_per_item = 40;
  p = plan_fleet(in);
  EXPECT_NEAR(p.peak_requests_per_s, 476.190, 1e-3);
  EXPECT_NEAR(p.gpus_exact, 6.2045, 1e-4);
  EXPECT_EQ(p.gpus, 7);
}

TEST(PlanFleet, ExactMultiplesDoNotRoundUp) {
  PlanInput in;
  in.peak_requests_per_s = 184.2;
  in.capacity_requests_per_s = 92.1;
  in.headroom = 0;
  EXPECT_EQ(plan_fleet(in).gpus, 2);  // 184.2 / 92.1 = 2 exactly (2.0000000000000004 in doubles)
  in.peak_requests_per_s = 0.01;
  EXPECT_EQ(plan_fleet(in).gpus, 1);  // never fewer than one
}

TEST(PlanFleet, CapacityConvertedThroughAudioSeconds) {
  PlanInput in;
  in.peak_requests_per_s = 1000;
  in.capacity_audio_seconds_per_s = 4500;  // e.g. 100 requests/s of 45 s clips
  in.mean_audio_s = 10;
  in.headroom = 0.1;
  const Plan p = plan_fleet(in);  // 4500 / 10 = 450 requests/s; 1000 / 450 x 1.1 = 2.444 -> 3
  EXPECT_DOUBLE_EQ(p.capacity_requests_per_s, 450);
  EXPECT_EQ(p.gpus, 3);
}

TEST(PlanFleet, RefusesIncompleteOrNonsensicalInput) {
  PlanInput in;
  in.capacity_requests_per_s = 92.1;
  EXPECT_THROW(plan_fleet(in), Error);  // no traffic
  in.peak_requests_per_s = 10;
  in.items_per_week = 1000;
  EXPECT_THROW(plan_fleet(in), Error);  // both forms
  in.items_per_week.reset();
  in.headroom = -0.1;
  EXPECT_THROW(plan_fleet(in), Error);
  in.headroom = 0.2;
  in.capacity_requests_per_s = 0;
  EXPECT_THROW(plan_fleet(in), Error);  // no capacity
  in.capacity_requests_per_s = 92.1;
  in.peak_requests_per_s = -5;
  EXPECT_THROW(plan_fleet(in), Error);
  in.peak_requests_per_s = 10;
  in.mean_audio_s = 10;  // conversion without the audio throughput
  EXPECT_THROW(plan_fleet(in), Error);
}

}  // namespace
}  // namespace steno::bench
