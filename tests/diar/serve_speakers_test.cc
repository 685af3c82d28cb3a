// Speaker-attributed transcripts over OpenAI's transcription route, as a user runs them: the real `steno serve`
// with the bundled ASR model and diarizer, curl over loopback, one held-out conversation. diarized_json's segments
// and verbose_json's words (diarize=true) must be exactly what `steno transcribe --diarize` prints for the file
// (the same models, the same join of words and speakers); known_speaker_names[] relabel speakers in the order they
// first speak; stream=true gives the same as server-sent events; what steno cannot honour is a 400 naming its
// field. KServe v2 serves both models too: the diarizer
// as a model of its own (segments and rttm outputs, as POST /v1/audio/diarizations and `steno diarize` give them)
// and the ASR model's `diarize` parameter (word_speakers, the speakers of verbose_json's words).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve_process.h"
#include "sse_events.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kAsr = fs::path(STENO_SOURCE_DIR) / "models" / "steno-tdt-small-en";
const fs::path kDiarizer = fs::path(STENO_SOURCE_DIR) / "models" / "steno-sortformer-small";
const fs::path kConversation = fs::path(STENO_TEST_DATA) / "diar-testset" / "conv01.flac";  // 3 speakers, 23 s

// The real server (tests/serve_process.h) with the requests these tests send.
class Server : public ServeProcess {
 public:
  explicit Server(const std::string& args) : ServeProcess(args) {}

  // POST /v1/audio/transcriptions with the conversation and `fields` (curl -F arguments): status and body.
  std::pair<int, std::string> transcribe(const std::string& fields) const {
    int code = 0;
    const std::string out = run("curl -s -w '\\n%{http_code}' http://127.0.0.1:" + std::to_string(port()) +
                                    "/v1/audio/transcriptions -F file=@" + kConversation.string() + " " + fields,
                                &code);
    const size_t nl = out.rfind('\n');
    return {nl == std::string::npos ? 0 : std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
  }

  // POST /v2/models/{model}/infer with the conversation as KServe's binary BYTES input (a JSON header, then the
  // element's 4-byte little-endian length and the file) and the header's `parameters`: status and body.
  std::pair<int, std::string> infer(const std::string& model, const json& parameters) const {
    const std::string audio = slurp(kConversation);
    const json header = {{"id", "conv01"},
                         {"parameters", parameters},
                         {"inputs", {{{"name", "audio"}, {"datatype", "BYTES"}, {"shape", {1}},
                                      {"parameters", {{"binary_data_size", audio.size() + 4}}}}}}};
    const std::string h = header.dump();
    const uint32_t n = static_cast<uint32_t>(audio.size());
    const fs::path body = dir() / "infer.bin";
    std::ofstream(body, std::ios::binary) << h << std::string(reinterpret_cast<const char*>(&n), 4) << audio;
    int code = 0;
    const std::string out = run("curl -s -w '\\n%{http_code}' http://127.0.0.1:" + std::to_string(port()) +
                                    "/v2/models/" + model + "/infer -H 'Inference-Header-Content-Length: " +
                                    std::to_string(h.size()) + "' --data-binary @" + body.string(),
                                &code);
    const size_t nl = out.rfind('\n');
    return {nl == std::string::npos ? 0 : std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
  }

};

// A KServe response's outputs by name.
std::map<std::string, json> outputs_of(const json& response) {
  std::map<std::string, json> out;
  for (const json& o : response["outputs"]) out[o["name"].get<std::string>()] = o;
  return out;
}

json parsed(const std::pair<int, std::string>& answer) {
  EXPECT_EQ(answer.first, 200) << answer.second;
  const json j = json::parse(answer.second, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << answer.second;
  return j;
}

// `steno ARGS` on the conversation with the bundled models' options; its output, which must be a success.
std::string steno_on_conversation(const std::string& args) {
  int code = 0;
  const std::string out = run(std::string(STENO_BINARY) + " --log-level error " + args + " " + kConversation.string(),
                              &code);
  EXPECT_EQ(code, 0) << args << ": " << out;
  return out;
}

// What `steno transcribe --diarize -f json` says of the conversation.
json cli_speakers() {
  return json::parse(steno_on_conversation("transcribe --diarize -f json -m " + kAsr.string() + " --diarizer " +
                                           kDiarizer.string()))["files"][0];
}

TEST(ServeSpeakers, DiarizedJsonAndVerboseWordsAreStenoTranscribeDiarizes) {
  const json want = cli_speakers();
  ASSERT_GT(want["segments"].size(), 2u) << want.dump();

  const Server server("--model " + kAsr.string() + " --diarizer " + kDiarizer.string());
  ASSERT_GT(server.port(), 0) << server.log();

  // OpenAI's diarizing model name, its natural format, and the chunking an SDK sends for long audio.
  const json diarized = parsed(server.transcribe("-F model=gpt-4o-transcribe-diarize -F response_format=diarized_json "
                                                 "-F chunking_strategy=auto"));
  EXPECT_EQ(diarized["task"], "transcribe");
  EXPECT_EQ(diarized["text"], want["text"]);
  EXPECT_NEAR(diarized["duration"].get<double>(), want["duration"].get<double>(), 1e-3);
  EXPECT_EQ(diarized["usage"]["type"], "duration");
  ASSERT_EQ(diarized["segments"].size(), want["segments"].size()) << diarized.dump();
  for (size_t i = 0; i < want["segments"].size(); ++i) {
    const json& got = diarized["segments"][i];
    const json& turn = want["segments"][i];
    EXPECT_EQ(got["type"], "transcript.text.segment");
    EXPECT_EQ(got["id"], "seg_" + std::to_string(i));
    EXPECT_EQ(got["speaker"], turn["speaker"]) << i;
    EXPECT_EQ(got["text"], turn["text"]) << i;
    EXPECT_DOUBLE_EQ(got["start"].get<double>(), turn["start"].get<double>()) << i;
    EXPECT_DOUBLE_EQ(got["end"].get<double>(), turn["end"].get<double>()) << i;
  }

  // Streamed (stream=true): the words as deltas tied to their segments, each segment after its words, then done.
  const auto [status, events_text] = server.transcribe("-F response_format=diarized_json -F stream=true");
  ASSERT_EQ(status, 200) << events_text;
  const std::vector<json> events = sse_events(events_text);
  std::vector<json> streamed_segments;
  std::string joined;
  for (const json& e : events) {
    if (e["type"] == "transcript.text.delta") {
      EXPECT_EQ(e["segment_id"], "seg_" + std::to_string(streamed_segments.size())) << e.dump();
      joined += e["delta"].get<std::string>();
    } else if (e["type"] == "transcript.text.segment") {
      streamed_segments.push_back(e);
    }
  }
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["type"], "transcript.text.done");
  EXPECT_EQ(events.back()["text"], want["text"]);
  EXPECT_EQ(joined, want["text"]);
  EXPECT_EQ(json(streamed_segments), diarized["segments"]);

  // NeMo-Speech.cpp's form: verbose_json words (and segments, the speaker turns) with speakers.
  const json verbose = parsed(server.transcribe("-F response_format=verbose_json -F diarize=true "
                                                "-F 'timestamp_granularities[]=word' "
                                                "-F 'timestamp_granularities[]=segment'"));
  ASSERT_EQ(verbose["words"].size(), want["words"].size()) << verbose.dump();
  for (size_t i = 0; i < want["words"].size(); ++i) {
    EXPECT_EQ(verbose["words"][i]["word"], want["words"][i]["text"]) << i;
    EXPECT_EQ(verbose["words"][i]["speaker"], want["words"][i]["speaker"]) << i;
  }
  ASSERT_EQ(verbose["segments"].size(), want["segments"].size());
  for (size_t i = 0; i < want["segments"].size(); ++i) {
    EXPECT_EQ(verbose["segments"][i]["speaker"], want["segments"][i]["speaker"]) << i;
    EXPECT_EQ(verbose["segments"][i]["text"], want["segments"][i]["text"]) << i;
  }
  // Without diarize, verbose_json is unchanged: no speakers.
  const json plain = parsed(server.transcribe("-F response_format=verbose_json -F 'timestamp_granularities[]=word'"));
  EXPECT_FALSE(plain["words"][0].contains("speaker"));

  // Names go to speakers in the order they first speak; the speakers beyond the list keep steno's labels.
  std::map<std::string, std::string> expected;  // steno's label -> the label with names
  const std::vector<std::string> names = {"agent", "customer"};
  for (const json& turn : want["segments"])
    if (const std::string s = turn["speaker"]; !expected.contains(s))
      expected[s] = expected.size() < names.size() ? names[expected.size()] : s;
  ASSERT_GE(expected.size(), 3u) << "the conversation's third speaker must go unnamed";
  const json named = parsed(server.transcribe("-F response_format=diarized_json -F 'known_speaker_names[]=agent' "
                                              "-F 'known_speaker_names[]=customer'"));
  ASSERT_EQ(named["segments"].size(), want["segments"].size());
  for (size_t i = 0; i < want["segments"].size(); ++i)
    EXPECT_EQ(named["segments"][i]["speaker"], expected.at(want["segments"][i]["speaker"])) << i;

  // What steno cannot honour, with a diarizer served.
  auto refused = [&](const std::string& fields, const std::string& param, const std::string& fragment) {
    const auto [status, body] = server.transcribe(fields);
    EXPECT_EQ(status, 400) << fields << ": " << body;
    const json e = json::parse(body, nullptr, false);
    ASSERT_TRUE(e.contains("error")) << body;
    EXPECT_EQ(e["error"]["param"], param) << body;
    EXPECT_NE(e["error"]["message"].get<std::string>().find(fragment), std::string::npos) << body;
  };
  refused("-F response_format=diarized_json -F 'known_speaker_names[]=agent' "
          "-F 'known_speaker_references[]=data:,'",
          "known_speaker_references[]", "cannot match voices");
  refused("-F response_format=diarized_json -F 'timestamp_granularities[]=word'", "timestamp_granularities[]",
          "diarized_json");
  refused("-F model=diarizer -F response_format=diarized_json", "model", "answers diarization, not transcription");
  EXPECT_NE(server.log().find("model=steno-sortformer-small outcome=ok"), std::string::npos)
      << "the diarizer ran as a request of its own model";
}

TEST(ServeSpeakers, KServeServesTheDiarizerAndTheDiarizeParameter) {
  int code = 0;
  const json want = cli_speakers();
  const json who = json::parse(steno_on_conversation("diarize -f json --diarizer " + kDiarizer.string()))["files"][0];
  const std::string rttm = steno_on_conversation("diarize --diarizer " + kDiarizer.string());

  const Server server("--model " + kAsr.string() + " --diarizer " + kDiarizer.string());
  ASSERT_GT(server.port(), 0) << server.log();
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());

  // The diarizer's metadata and config name its own platform and outputs.
  const json meta = json::parse(run("curl -s " + base + "/v2/models/steno-sortformer-small", &code));
  EXPECT_EQ(meta["platform"], "steno_sortformer");
  ASSERT_EQ(meta["outputs"].size(), 2u) << meta.dump();
  EXPECT_EQ(meta["outputs"][0]["name"], "segments");
  EXPECT_EQ(meta["outputs"][1]["name"], "rttm");
  const json config = json::parse(run("curl -s " + base + "/v2/models/steno-sortformer-small/config", &code));
  EXPECT_EQ(config["output"][1]["name"], "rttm");
  EXPECT_EQ(config["output"][1]["data_type"], "TYPE_STRING");

  // Who spoke when: the JSON of `steno diarize -f json`, and its RTTM (the recording named by the request id).
  const json diarized = parsed(server.infer("steno-sortformer-small", json::object()));
  auto out = outputs_of(diarized);
  ASSERT_EQ(out.size(), 2u) << diarized.dump();
  const json segments = json::parse(out["segments"]["data"][0].get<std::string>());
  EXPECT_EQ(segments["segments"], who["segments"]);
  EXPECT_EQ(segments["speakers"], who["speakers"]);
  EXPECT_EQ(out["rttm"]["data"][0], rttm);

  // The ASR model with diarize: word_speakers beside the words, the speakers `steno transcribe --diarize` gives.
  const json transcribed = parsed(server.infer("steno-tdt-small-en", {{"diarize", true}}));
  out = outputs_of(transcribed);
  ASSERT_EQ(out.count("word_speakers"), 1u) << transcribed.dump();
  ASSERT_EQ(out["words"]["data"].size(), want["words"].size());
  ASSERT_EQ(out["word_speakers"]["data"].size(), want["words"].size());
  for (size_t i = 0; i < want["words"].size(); ++i) {
    EXPECT_EQ(out["words"]["data"][i], want["words"][i]["text"]) << i;
    EXPECT_EQ(out["word_speakers"]["data"][i], want["words"][i]["speaker"]) << i;
  }
  // Without it, no word_speakers; asked for without it, or diarize on the diarizer: 400 saying why.
  EXPECT_EQ(outputs_of(parsed(server.infer("steno-tdt-small-en", json::object()))).count("word_speakers"), 0u);
  const auto [status, body] = server.infer("steno-sortformer-small", {{"diarize", true}});
  EXPECT_EQ(status, 400) << body;
  EXPECT_NE(body.find("'diarize' is for transcription models"), std::string::npos) << body;
  const auto [bad_status, bad_body] = server.infer("steno-tdt-small-en", {{"diarize", "maybe"}});
  EXPECT_EQ(bad_status, 400) << bad_body;
  EXPECT_NE(bad_body.find("true or false"), std::string::npos) << bad_body;
}

}  // namespace
}  // namespace steno::testing
