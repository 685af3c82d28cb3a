// `steno diarize` as a user runs it: the real binary on the reference's WAV files, its exit status and what it
// prints. The segments must be NeMo's (golden lines of the single runs), in RTTM and in JSON.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_util.h"
#include "serve_process.h"
#include "golden.h"
#include "sortformer_testdata.h"
#include "steno/diar/diarize.h"
#include "steno/diar/segments.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;

using diar::testdata::kPrepared;
const fs::path kRef = fs::path(STENO_TEST_DATA) / "sortformer-tiny";

std::string steno(const std::string& args, int* code) {
  return run(std::string(STENO_BINARY) + " " + args, code);
}

std::multiset<std::string> golden_lines(int clip) {
  static const GoldenSet golden((kPrepared / "golden-sortformer-tiny").string());
  std::multiset<std::string> out;
  std::istringstream in(golden.text("single" + std::to_string(clip) + ".seg_callhome.clip" + std::to_string(clip) +
                                    ".lines"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.insert(line);
  return out;
}

// RTTM lines of `file_id` as NeMo lines "start end speaker".
std::multiset<std::string> rttm_as_lines(const std::string& rttm, const std::string& file_id) {
  std::multiset<std::string> out;
  std::istringstream in(rttm);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string type, id, channel, na1, na2, speaker;
    double start = 0, duration = 0;
    f >> type >> id >> channel >> start >> duration >> na1 >> na2 >> speaker;
    if (type != "SPEAKER" || id != file_id) continue;
    out.insert(fmt::format("{:.3f} {:.3f} {}", start, start + duration, speaker));
  }
  return out;
}

// --vad off throughout where NeMo is the reference: its segments as they are, not kept to speech.
TEST(DiarizeCli, RttmOfEachFileIsNeMosSegments) {
  int code = 0;
  const std::string diarizer = (kPrepared / "sortformer-tiny-callhome").string();
  const std::string out = steno("diarize --vad off --diarizer " + diarizer + " " + (kRef / "conv0.wav").string() +
                                    " " + (kRef / "conv2.wav").string() + " " + (kRef / "conv1.wav").string(),
                                &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(rttm_as_lines(out, "conv0"), golden_lines(0));
  EXPECT_EQ(rttm_as_lines(out, "conv1"), golden_lines(1));
  EXPECT_EQ(rttm_as_lines(out, "conv2"), golden_lines(2));
}

TEST(DiarizeCli, JsonListsSegmentsInTimeOrderAndTheSettingsUsed) {
  int code = 0;
  const std::string diarizer = (kPrepared / "sortformer-tiny").string();
  const std::string out = steno("diarize --vad off -f json --diarizer " + diarizer + " --onset 0.53 "
                                "--offset 0.49 --pad-onset 0.23 --pad-offset 0.01 --min-duration-on 0.42 "
                                "--min-duration-off 0.34 " + (kRef / "conv1.wav").string(),
                                &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(out);
  EXPECT_DOUBLE_EQ(doc["postprocessing"]["onset"].get<double>(), 0.53);
  ASSERT_EQ(doc["files"].size(), 1u);
  const nlohmann::json& f = doc["files"][0];
  EXPECT_NEAR(f["duration"].get<double>(), 10.43, 0.01);
  std::multiset<std::string> lines;
  double previous = -1;
  for (const auto& s : f["segments"]) {
    EXPECT_GE(s["start"].get<double>(), previous);
    previous = s["start"].get<double>();
    lines.insert(fmt::format("{:.3f} {:.3f} {}", s["start"].get<double>(), s["end"].get<double>(),
                             s["speaker"].get<std::string>()));
  }
  EXPECT_EQ(lines, golden_lines(1));  // the options reproduce the CALLHOME post-processing
  EXPECT_FALSE(f["speakers"].empty());
  EXPECT_GT(doc["summary"]["rtfx"].get<double>(), 0.0);
}

// --streaming with the parameters of a streaming golden set: NeMo's streaming probabilities, post-processed.
TEST(DiarizeCli, StreamingGivesTheSegmentsOfNeMosStreamingProbabilities) {
  const GoldenSet golden((kPrepared / "golden-sortformer-tiny-streaming").string());
  const nlohmann::json& cfg = golden.meta()["configs"]["small"];
  std::string params;
  for (const char* f : {"chunk_len", "chunk_left_context", "chunk_right_context", "fifo_len",
                        "spkcache_update_period", "spkcache_len"})
    params += fmt::format(" --streaming-param {}={}", f, cfg[f].get<int>());
  int code = 0;
  const std::string diarizer = (kPrepared / "sortformer-tiny").string();
  const std::string out =
      steno("diarize --vad off --diarizer " + diarizer + params + " " + (kRef / "conv2.wav").string(), &code);
  ASSERT_EQ(code, 0) << out;
  const std::vector<float> probs = golden.floats("small.clip2.preds");
  std::multiset<std::string> want;
  for (const diar::SpeakerSegment& s : diar::speaker_segments(probs, static_cast<int64_t>(probs.size() / 4), 4, 8, {}))
    want.insert(fmt::format("{:.3f} {:.3f} {}", s.start, s.end, diar::speaker_label(s.speaker)));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(rttm_as_lines(out, "conv2"), want);

  // The JSON names the operating point; an unknown preset and a bad parameter are refused by name.
  // (--log-level error: the tiny model's per-feature front end draws a warning that would join the JSON here)
  const std::string json = steno("--log-level error diarize -f json --streaming 1.04s --diarizer " + diarizer + " " +
                                     (kRef / "conv0.wav").string(),
                                 &code);
  ASSERT_EQ(code, 0) << json;
  const nlohmann::json doc = nlohmann::json::parse(json);
  EXPECT_EQ(doc["streaming"]["preset"], "1.04s");
  EXPECT_DOUBLE_EQ(doc["streaming"]["latency_seconds"].get<double>(), 1.04);
  EXPECT_GT(doc["streaming"]["chunks"].get<int>(), 5);
  std::string bad = steno("diarize --streaming 2s --diarizer " + diarizer + " " + (kRef / "conv0.wav").string(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(bad.find("1.04s"), std::string::npos) << bad;
  bad = steno("diarize --streaming-param fifo_len=-1 --diarizer " + diarizer + " " + (kRef / "conv0.wav").string(),
              &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(bad.find("fifo_len"), std::string::npos) << bad;
}

// `steno transcribe --diarize`: the bundled ASR model's words, each with a speaker, grouped into turns that break
// exactly where the speaker changes or a pause exceeds 1 s, and the same turns as text.
TEST(DiarizeCli, TranscribeDiarizeTagsEveryWordAndGroupsTurns) {
  int code = 0;
  const std::string args = "--log-level error transcribe --diarize -m " +
                           (fs::path(STENO_SOURCE_DIR) / "models/steno-tdt-small-en").string() + " --diarizer " +
                           (kPrepared / "sortformer-tiny").string() + " " + (kRef / "conv2.wav").string();
  const std::string out = steno(args + " -f json", &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(out);
  const nlohmann::json& f = doc["files"][0];
  ASSERT_GT(f["words"].size(), 10u) << out;
  std::vector<std::string> texts;
  for (const auto& w : f["words"]) {
    EXPECT_EQ(w["speaker"].get<std::string>().rfind("speaker_", 0), 0u);
    texts.push_back(w["text"]);
  }
  size_t word = 0;
  for (size_t i = 0; i < f["segments"].size(); ++i) {
    const nlohmann::json& seg = f["segments"][i];
    std::string joined;
    for (const auto& w : seg["words"]) {
      EXPECT_EQ(w["speaker"], seg["speaker"]);
      EXPECT_EQ(w["text"], texts.at(word++));
      joined += (joined.empty() ? "" : " ") + w["text"].get<std::string>();
    }
    EXPECT_EQ(seg["text"], joined);
    if (i > 0) {
      const nlohmann::json& prev = f["segments"][i - 1];
      EXPECT_TRUE(prev["speaker"] != seg["speaker"] ||
                  seg["start"].get<double>() - prev["end"].get<double>() > 1.0)
          << "turn " << i << " neither changes speaker nor follows a pause";
    }
  }
  EXPECT_EQ(word, texts.size());  // every word is in exactly one turn
  EXPECT_EQ(doc["diarization"]["diarizer"], (kPrepared / "sortformer-tiny").string());
  EXPECT_GT(f["timings_ms"]["diarize"].get<double>(), 0.0);

  const std::string text = steno(args, &code);
  ASSERT_EQ(code, 0) << text;
  std::istringstream lines(text);
  size_t turns = 0;
  for (std::string line; std::getline(lines, line); ++turns) EXPECT_EQ(line.rfind("speaker_", 0), 0u) << line;
  EXPECT_EQ(turns, f["segments"].size());
}

// `steno der`: a reference against itself scores 0; against steno diarize's RTTM, the JSON's totals are the sums
// of its files'; a missing file and a malformed line fail with a message.
TEST(DiarizeCli, DerScoresRttmFiles) {
  const fs::path dir = fs::temp_directory_path() / ("steno_der_" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    std::ofstream ref(dir / "ref.rttm");
    for (const char* f : {"conv0.rttm", "conv1.rttm"}) ref << std::ifstream(kRef / f).rdbuf();
  }
  int code = 0;
  std::string out = steno("der " + (dir / "ref.rttm").string() + " " + (dir / "ref.rttm").string(), &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("TOTAL                    DER   0.00 %"), std::string::npos) << out;

  out = steno("diarize --vad off --diarizer " + (kPrepared / "sortformer-tiny").string() + " " +
                  (kRef / "conv0.wav").string() + " " + (kRef / "conv1.wav").string() + " > " +
                  (dir / "hyp.rttm").string(),
              &code);
  ASSERT_EQ(code, 0) << out;
  out = steno("der -f json --collar 0.25 " + (dir / "ref.rttm").string() + " " + (dir / "hyp.rttm").string(), &code);
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json doc = nlohmann::json::parse(out);
  ASSERT_EQ(doc["files"].size(), 2u);
  double missed = 0, speech = 0;
  for (const auto& f : doc["files"]) {
    missed += f["missed"].get<double>();
    speech += f["reference_speech"].get<double>();
  }
  EXPECT_NEAR(doc["total"]["missed"].get<double>(), missed, 1e-9);
  EXPECT_NEAR(doc["total"]["reference_speech"].get<double>(), speech, 1e-9);
  EXPECT_GT(doc["total"]["der"].get<double>(), 0.0);  // a random-weight model is no diarizer

  out = steno("der " + (dir / "nope.rttm").string() + " " + (dir / "ref.rttm").string(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("nope.rttm"), std::string::npos) << out;
  std::ofstream(dir / "bad.rttm") << "SPEAKER conv0 1 zero 1.0 <NA> <NA> A <NA> <NA>\n";
  out = steno("der " + (dir / "ref.rttm").string() + " " + (dir / "bad.rttm").string(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("bad.rttm:1"), std::string::npos) << out;
  fs::remove_all(dir);
}

// `steno serve --diarizer DIR`: the diarizer beside the transcription model, through POST /v1/audio/diarizations
// over loopback: the same segments as `steno diarize` (JSON and RTTM), each route refusing the other task's model,
// and both models listed.
TEST(ServeDiarizer, DiarizationsOverHttpAreStenoDiarizes) {
  const std::string diarizer = (kPrepared / "sortformer-tiny").string();
  ServeProcess server("--diarizer " + diarizer, "");
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string url = server.url();
  const std::string wav = (kRef / "conv1.wav").string();
  int code = 0;

  const std::string json = steno("--log-level error diarize -f json --diarizer " + diarizer + " " + wav, &code);
  ASSERT_EQ(code, 0) << json;
  const nlohmann::json want = nlohmann::json::parse(json)["files"][0];
  const std::string got = run("curl -s " + url + "/v1/audio/diarizations -F file=@" + wav, &code);
  const nlohmann::json served = nlohmann::json::parse(got, nullptr, false);
  ASSERT_FALSE(served.is_discarded()) << got;
  EXPECT_EQ(served["segments"], want["segments"]);
  EXPECT_EQ(served["speakers"], want["speakers"]);
  EXPECT_NEAR(served["duration"].get<double>(), want["duration"].get<double>(), 1e-9);

  const std::string rttm = steno("diarize --vad off --diarizer " + diarizer + " " + wav, &code);
  EXPECT_EQ(run("curl -s " + url + "/v1/audio/diarizations -F model=diarizer -F response_format=rttm -F file=@" + wav,
                &code),
            rttm);

  std::string out = run("curl -s -w ' %{http_code}' " + url + "/v1/audio/diarizations -F model=steno-tdt-small-en "
                        "-F file=@" + wav, &code);
  EXPECT_NE(out.find("answers transcription, not diarization"), std::string::npos) << out;
  EXPECT_NE(out.find(" 400"), std::string::npos) << out;
  out = run("curl -s -w ' %{http_code}' " + url + "/v1/audio/transcriptions -F model=diarizer -F file=@" + wav, &code);
  EXPECT_NE(out.find("answers diarization, not transcription"), std::string::npos) << out;
  out = run("curl -s -w ' %{http_code}' " + url + "/v1/audio/diarizations -F response_format=srt -F file=@" + wav,
            &code);
  EXPECT_NE(out.find(" 400"), std::string::npos) << out;
  // KServe serves the diarizer as a model of its own (tests/diar/serve_speakers_test.cc checks its answers).
  out = run("curl -s -w ' %{http_code}' " + url + "/v2/models/diarizer", &code);
  EXPECT_NE(out.find("\"platform\":\"steno_sortformer\""), std::string::npos) << out;
  EXPECT_NE(out.find(" 200"), std::string::npos) << out;
  const nlohmann::json models = nlohmann::json::parse(run("curl -s " + url + "/v1/models", &code));
  ASSERT_EQ(models["data"].size(), 2u);
  EXPECT_EQ(models["data"][1]["id"], "sortformer-tiny");

  EXPECT_TRUE(server.stop()) << "the server did not exit after SIGTERM";
}

TEST(DiarizeCli, ABadFileFailsAloneAndBadOptionsAreRefused) {
  const fs::path bad = fs::temp_directory_path() / ("steno_diarize_bad_" + std::to_string(getpid()) + ".wav");
  std::ofstream(bad) << "RIFF not really";
  int code = 0;
  const std::string diarizer = (kPrepared / "sortformer-tiny").string();
  std::string out = steno("diarize --diarizer " + diarizer + " " + bad.string() + " " + (kRef / "conv0.wav").string(),
                          &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find(bad.string()), std::string::npos) << out;
  EXPECT_NE(out.find("SPEAKER conv0 1"), std::string::npos) << out;  // the good file is still diarized
  fs::remove(bad);

  out = steno("diarize --diarizer " + diarizer + " --onset 1.5 " + (kRef / "conv0.wav").string(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("--onset"), std::string::npos) << out;
  out = steno("diarize --diarizer " + diarizer + " -f srt " + (kRef / "conv0.wav").string(), &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("--format"), std::string::npos) << out;
  // An ASR model is not a diarizer, and the message says so.
  out = steno("diarize --diarizer " + (kPrepared / "nemo-tiny-25").string() + " " + (kRef / "conv0.wav").string(),
              &code);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("model_type"), std::string::npos) << out;
}

}  // namespace
}  // namespace steno::testing
