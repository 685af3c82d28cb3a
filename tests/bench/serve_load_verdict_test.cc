// serve_load's verdict on an answer and what it counts as (bench/serve_load_http.h, serve_load_results.h): exact text
// by default; with --accept-differing-text another text is ok and tallied apart as differs; malformed answers fail
// either way. A diarization's answer (--route diarizations) is judged by its segments.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve_load_http.h"
#include "serve_load_results.h"

namespace serve_load {
namespace {

bhttp::response<bhttp::string_body> answer(int status, const std::string& body) {
  bhttp::response<bhttp::string_body> r{static_cast<bhttp::status>(status), 11};
  r.body() = body;
  r.prepare_payload();
  return r;
}

// The answer judged against "a cat", counted as a loop counts it.
Outcome counted(int status, const std::string& body, bool accept_differing_text) {
  Outcome o;
  o.take(status, judge(answer(status, body), "a cat"), accept_differing_text);
  return o;
}

TEST(ServeLoadVerdict, TheReferenceTextIsOkAndNotDiffering) {
  for (const bool accept : {false, true}) {
    const Outcome o = counted(200, R"({"text": "a cat"})", accept);
    EXPECT_EQ(o.result, Result::kOk) << accept;
    EXPECT_FALSE(o.differs) << accept;
  }
}

TEST(ServeLoadVerdict, AnotherTextIsWrongWithoutTheOption) {
  const Verdict v = judge(answer(200, R"({"text": "a hat"})"), "a cat");
  EXPECT_EQ(result_of(v, false), Result::kWrong);
  const Outcome o = counted(200, R"({"text": "a hat"})", false);
  EXPECT_EQ(o.result, Result::kWrong);
  EXPECT_FALSE(o.differs);
  EXPECT_EQ(o.got, "a hat");
}

TEST(ServeLoadVerdict, AnotherTextIsOkAndDiffersWithTheOption) {
  const Verdict v = judge(answer(200, R"({"text": "a hat"})"), "a cat");
  EXPECT_EQ(result_of(v, true), Result::kOk);
  const Outcome o = counted(200, R"({"text": "a hat"})", true);
  EXPECT_EQ(o.result, Result::kOk);
  EXPECT_TRUE(o.differs);
  EXPECT_EQ(o.got, "a hat");
}

TEST(ServeLoadVerdict, MalformedAnswersFailEitherWay) {
  for (const bool accept : {false, true}) {
    for (const auto& [status, body] : std::vector<std::pair<int, std::string>>{
             {500, R"({"text": "a cat"})"}, {429, ""}, {200, "not json"}, {200, R"({"txt": "a cat"})"},
             {200, R"({"text": 7})"}, {200, R"(["a cat"])"}}) {
      const Outcome o = counted(status, body, accept);
      EXPECT_EQ(o.result, Result::kFailed) << status << " " << body << " " << accept;
      EXPECT_FALSE(o.differs) << status << " " << body << " " << accept;
      EXPECT_FALSE(o.reason.empty());
    }
  }
}

// A point's tally: differing answers count among the ok ones (the SLA and the exit status see no error) and apart
// as differs; the examples list them by text.
TEST(ServeLoadVerdict, TheTallyCountsDifferingAnswersAsOkAndApart) {
  std::vector<Outcome> outcomes = {counted(200, R"({"text": "a cat"})", true),
                                   counted(200, R"({"text": "a hat"})", true),
                                   counted(200, R"({"text": "a hat"})", true), counted(503, "", true)};
  const Tally t = tally(outcomes, Phase::kWindow);
  EXPECT_EQ(t.requests, 4);
  EXPECT_EQ(t.ok, 3);
  EXPECT_EQ(t.differs, 2);
  EXPECT_EQ(t.wrong, 0);
  EXPECT_EQ(t.failed, 1);
  const Json j = tally_json(t);
  EXPECT_EQ(j.at("differs"), 2);
  EXPECT_EQ(all_requests_json(t, "").at("differs"), 2);
  const Json examples = differs_examples(outcomes, [](const Outcome&) { return -1; });
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].at("got"), "a hat");
  EXPECT_EQ(examples[0].at("times"), 2);
  EXPECT_TRUE(wrong_examples(outcomes, [](const Outcome&) { return -1; }).empty());
  EXPECT_EQ(request_row(Json::object(), outcomes[1]).at("differs"), true);
  EXPECT_FALSE(request_row(Json::object(), outcomes[0]).contains("differs"));
  // Without the option the same answers are wrong, and nothing differs.
  const Tally exact = tally(std::vector<Outcome>{counted(200, R"({"text": "a hat"})", false)}, Phase::kWindow);
  EXPECT_EQ(exact.wrong, 1);
  EXPECT_EQ(exact.ok, 0);
  EXPECT_EQ(exact.differs, 0);
}

TEST(ServeLoadVerdict, ADiarizationIsJudgedByItsSegments) {
  const std::string segments = R"([{"end":2.5,"speaker":"speaker_0","start":0.1}])";
  const std::string body = R"({"duration": 3.0, "speakers": ["speaker_0"], "segments": )" + segments + "}";
  const Verdict same = judge(answer(200, body), nlohmann::json::parse(segments).dump());
  EXPECT_TRUE(same.ok) << same.reason;
  const std::string moved_body = R"({"duration": 3.0, "segments": [{"end":2.6,"speaker":"speaker_0","start":0.1}]})";
  const Verdict moved = judge(answer(200, moved_body), nlohmann::json::parse(segments).dump());
  EXPECT_TRUE(moved.wrong_text);
  EXPECT_EQ(result_of(moved, true), Result::kOk);
  EXPECT_EQ(result_of(judge(answer(200, R"({"duration": 3.0, "segments": "none"})"), ""), false), Result::kFailed);
}

}  // namespace
}  // namespace serve_load
