// `steno serve`'s configuration: the option table (every setting once: flag, config key, help, default), the
// config file, the checks, and the option reference in docs/ generated from the table.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "../error_util.h"
#include "steno/serve/config.h"
#include "steno/serve/options.h"

namespace steno::serve {
namespace {

using steno::testing::error_of;

const Option& option(const std::string& name) {
  for (const Option& o : serve_options())
    if (o.name == name) return o;
  throw std::runtime_error("no option " + name);
}

TEST(OptionTable, EveryOptionHasOneNameHelpAndARoundTrip) {
  std::set<std::string> names;
  const ServeConfig defaults;
  for (const Option& o : serve_options()) {
    EXPECT_TRUE(names.insert(o.name).second) << o.name << " twice";
    for (const std::string& other : o.other_names) EXPECT_TRUE(names.insert(other).second) << other << " twice";
    EXPECT_FALSE(o.help.empty()) << o.name;
    EXPECT_FALSE(o.group.empty()) << o.name;
    EXPECT_TRUE(o.kind == OptionKind::kFlag || !o.value_name.empty()) << o.name;
    // What an option shows, it reads back to the same value: from a flag and from the config file.
    ServeConfig c;
    const std::string shown = o.show(defaults);
    if (o.kind != OptionKind::kFlag) o.parse(c, shown);
    EXPECT_EQ(o.show(c), shown) << o.name;
  }
  EXPECT_GE(names.size(), 35u);
}

TEST(OptionTable, FlagsParseTheirKindAndNameThemselvesWhenWrong) {
  ServeConfig c;
  option("max-batch").parse(c, "8");
  EXPECT_EQ(c.model.max_batch, 8);
  EXPECT_NE(error_of([&] { option("max-batch").parse(c, "eight"); }, ErrorCode::kInvalidArgument)
                .find("--max-batch: 'eight' is not an integer"),
            std::string::npos);
  option("max-queue-delay-ms").parse(c, "2.5");
  EXPECT_EQ(c.model.max_queue_delay_ms, 2.5);
  option("share").parse(c, "mps");
  EXPECT_EQ(c.model.share, ShareMode::kMps);
  EXPECT_NE(error_of([&] { option("share").parse(c, "threads"); }, ErrorCode::kInvalidArgument)
                .find("'threads' is not lanes, processes, mps or green"),
            std::string::npos);
  option("aliases").parse(c, "whisper-1, my-asr");
  EXPECT_EQ(c.model.aliases, (std::vector<std::string>{"whisper-1", "my-asr"}));
  option("aliases").parse(c, "");
  EXPECT_TRUE(c.model.aliases.empty());
  EXPECT_THROW(option("aliases").parse(c, "a,,b"), Error);
  option("spread-batches").parse(c, "true");
  EXPECT_TRUE(c.model.spread_batches);
}

TEST(ServeConfig, BothModelsByRoleFromFlagsAndTheModelsList) {
  ServeConfig c;
  option("model").parse(c, "asr=/m/asr");
  option("model").parse(c, "diarizer=/m/diar");
  EXPECT_EQ(c.model.dir, "/m/asr");
  EXPECT_EQ(c.diarizer.dir, "/m/diar");
  option("model").parse(c, "/m/plain");  // a plain directory is the ASR model's, as always
  EXPECT_EQ(c.model.dir, "/m/plain");
  EXPECT_NE(error_of([&] { option("model").parse(c, "vad=/x"); }, ErrorCode::kInvalidArgument)
                .find("'vad=/x' is not DIR, asr=DIR or diarizer=DIR"),
            std::string::npos);

  ServeConfig f;
  apply_config_json(f, R"({"models": ["asr=/a", {"role": "diarizer", "dir": "/d"}]})");
  EXPECT_EQ(f.model.dir, "/a");
  EXPECT_EQ(f.diarizer.dir, "/d");
  EXPECT_EQ(option("models").show(f), "asr=/a,diarizer=/d");
  EXPECT_THROW(apply_config_json(f, R"({"models": [{"role": "diarizer"}]})"), Error);
  EXPECT_THROW(apply_config_json(f, R"({"models": "asr=/a"})"), Error);
  ServeConfig g;
  option("models").parse(g, "diarizer=/d2, asr=/a2");
  EXPECT_EQ(g.model.dir, "/a2");
  EXPECT_EQ(g.diarizer.dir, "/d2");
}

TEST(OptionTable, TheReferenceInDocsIsTheTables) {
  std::ifstream in(std::string(STENO_SOURCE_DIR) + "/docs/serve-options.md");
  ASSERT_TRUE(in) << "docs/serve-options.md is missing: write it with `steno serve --options-reference`";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), options_reference_markdown())
      << "docs/serve-options.md is out of date: `build/apps/steno/steno serve --options-reference > "
         "docs/serve-options.md`";
  for (const Option& o : serve_options()) EXPECT_NE(text.str().find("`--" + o.name), std::string::npos) << o.name;
}

TEST(ServeConfig, FileFlagsAndTheApiKeyRule) {
  ServeConfig c;
  apply_config_json(c, R"({"port": 9000, "max-body-mb": 8, "aliases": ["whisper-1"], "lanes": 3})");
  EXPECT_EQ(c.port, 9000);
  EXPECT_EQ(c.max_body_mb, 8);
  EXPECT_EQ(c.model.aliases, std::vector<std::string>{"whisper-1"});
  EXPECT_EQ(c.model.executors, 3);  // "lanes": the executors' other name
  EXPECT_NE(error_of([&] { apply_config_json(c, R"({"prot": 1})"); }, ErrorCode::kInvalidArgument)
                .find("unknown setting 'prot'"),
            std::string::npos);  // a typo is an error
  EXPECT_NE(error_of([&] { apply_config_json(c, R"({"port": "x"})"); }, ErrorCode::kInvalidArgument)
                .find("setting 'port' has the wrong type"),
            std::string::npos);  // so is a wrong type
  EXPECT_THROW(apply_config_json(c, R"({"port": 1.5})"), Error);
  EXPECT_THROW(apply_config_json(c, R"({"aliases": "whisper-1"})"), Error);  // a list, not a string
  EXPECT_THROW(apply_config_json(c, R"({"share": "threads"})"), Error);
  EXPECT_THROW(apply_config_json(c, R"({"port": )"), Error);
  EXPECT_THROW(apply_config_file(c, "/nonexistent/steno.json"), Error);
  validate(c);

  for (const char* host : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "example.com", "128.0.0.1"})
    EXPECT_FALSE(is_loopback_host(host)) << host;

  c.host = "0.0.0.0";
  EXPECT_NE(error_of([&] { validate(c); }, ErrorCode::kInvalidArgument).find("without an API key"),
            std::string::npos);
  c.api_key = "k";
  validate(c);
  EXPECT_NE(describe(c).find("api_key = (set)"), std::string::npos);  // the settings logged never show the key
  EXPECT_EQ(describe(c).find("= k\n"), std::string::npos);
  c.model.max_batch = 0;
  EXPECT_THROW(validate(c), Error);
}

TEST(ServeConfig, TheDefaultAliasesAreWhatOpenAIAppsSend) {
  const ServeConfig c;
  for (const char* name : {"whisper-1", "gpt-4o-transcribe", "gpt-4o-mini-transcribe", "gpt-4o-transcribe-diarize",
                           "default"})
    EXPECT_NE(std::find(c.model.aliases.begin(), c.model.aliases.end(), name), c.model.aliases.end()) << name;
}

TEST(ServeConfig, ShareWeightsNeedsWorkerProcessesOnACudaDevice) {
  ServeConfig c;
  apply_config_json(c, R"({"share": "processes", "device": "cuda", "share_weights": true})");
  EXPECT_TRUE(c.model.share_weights);
  validate(c);
  c.model.share = ShareMode::kMps;
  validate(c);
  const auto refused = [&](ShareMode share, const std::string& device) {
    ServeConfig bad = c;
    bad.model.share = share;
    bad.model.device = device;
    if (share == ShareMode::kGreen) bad.model.green_sms = 16;
    return error_of([&] { validate(bad); }, ErrorCode::kInvalidArgument);
  };
  for (const auto& [share, device] : std::vector<std::pair<ShareMode, std::string>>{
           {ShareMode::kLanes, "cuda"}, {ShareMode::kGreen, "cuda:0"}, {ShareMode::kProcesses, "cpu"}}) {
    const std::string why = refused(share, device);
    EXPECT_NE(why.find("share_weights shares one device copy of the weights among worker processes: it needs share "
                       "processes or mps on a CUDA device"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find(std::string("share is '") + share_mode_name(share) + "'"), std::string::npos) << why;
  }
  EXPECT_THROW(apply_config_json(c, R"({"share_weights": "yes"})"), Error);  // a bool, not a string
}

TEST(ServeConfig, FaultInjectionNeedsWorkerProcesses) {
  ServeConfig c;
  c.enable_fault_injection = true;
  EXPECT_NE(error_of([&] { validate(c); }, ErrorCode::kInvalidArgument).find("needs worker processes"),
            std::string::npos);
  c.diarizer.dir = "diarizer";  // a diarizer in worker processes is enough (a lane model refuses the header)
  c.diarizer.share = ShareMode::kProcesses;
  validate(c);
  c.diarizer.share = ShareMode::kLanes;
  EXPECT_NE(error_of([&] { validate(c); }, ErrorCode::kInvalidArgument).find("needs worker processes"),
            std::string::npos);
  c.model.share = ShareMode::kProcesses;
  validate(c);
}

TEST(ServeConfig, SpreadBatchesIsAFlag) {
  ServeConfig c;
  EXPECT_FALSE(c.model.spread_batches);  // Triton's behaviour unless asked
  apply_config_json(c, R"({"spread_batches": true})");
  EXPECT_TRUE(c.model.spread_batches);
  EXPECT_THROW(apply_config_json(c, R"({"spread_batches": 1})"), Error);  // a bool, not a number
}

TEST(ServeConfig, DeviceAndDtype) {
  ServeConfig c;
  EXPECT_EQ(c.model.compute_dtype(), DType::kF32);  // the CPU's default
  validate(c);
  apply_config_json(c, R"({"device": "cuda:1"})");
  EXPECT_EQ(c.model.compute_dtype(), DType::kBF16);  // CUDA's default
  validate(c);  // a device is checked by name here; its presence at load time
  c.model.dtype = "f16";
  validate(c);
  c.model.dtype = "i32";
  EXPECT_THROW(validate(c), Error);  // not a compute dtype
  c.model.device = "cpu";
  c.model.dtype = "bf16";
  EXPECT_THROW(validate(c), Error);  // the CPU engine is f32 only
  c.model.device = "tpu";
  c.model.dtype = "";
  EXPECT_THROW(validate(c), Error);
}

}  // namespace
}  // namespace steno::serve
