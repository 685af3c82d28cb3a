// `steno der REF.rttm HYP.rttm`: the diarization error rate of a hypothesis against a reference, per recording and
// in total (diar/der.h: md-eval's definition, collar 0.25 s by default, overlapped speech scored).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "steno/core/error.h"
#include "steno/diar/der.h"

namespace steno::cli {
namespace {

struct DerOptions {
  std::string reference, hypothesis;
  double collar = 0.25;
  std::string format = "text";
};

std::map<std::string, std::vector<diar::LabeledSegment>> read_rttm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kNotFound, "cannot read {}", path);
  std::ostringstream text;
  text << in.rdbuf();
  return diar::parse_rttm(text.str(), path);
}

nlohmann::ordered_json result_json(const diar::DerResult& r) {
  return {{"der", r.der()},
          {"missed", r.missed},
          {"false_alarm", r.false_alarm},
          {"confusion", r.confusion},
          {"reference_speech", r.reference_speech}};
}

void print_line(const std::string& name, const diar::DerResult& r) {
  std::printf("%-24s DER %6.2f %%  (missed %.2f s, false alarm %.2f s, confusion %.2f s of %.2f s)\n", name.c_str(),
              100 * r.der(), r.missed, r.false_alarm, r.confusion, r.reference_speech);
}

int run_der(const DerOptions& opt) {
  STENO_CHECK(opt.format == "text" || opt.format == "json", "--format must be text or json, got '{}'", opt.format);
  const auto ref = read_rttm(opt.reference), hyp = read_rttm(opt.hypothesis);
  STENO_CHECK(!ref.empty(), "{} has no SPEAKER lines", opt.reference);
  for (const auto& [id, _] : hyp)
    if (!ref.contains(id))
      std::fprintf(stderr, "steno: %s: recording '%s' is not in the reference; not scored\n", opt.hypothesis.c_str(),
                   id.c_str());
  diar::DerResult total;
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& [id, segments] : ref) {
    const auto it = hyp.find(id);
    const diar::DerResult r = diarization_error(segments, it == hyp.end() ? std::vector<diar::LabeledSegment>{}
                                                                          : it->second,
                                                opt.collar);
    total += r;
    if (opt.format == "text") {
      print_line(id, r);
    } else {
      nlohmann::ordered_json one = {{"file", id}};
      one.update(result_json(r));
      one["mapping"] = r.mapping;
      files.push_back(std::move(one));
    }
  }
  if (opt.format == "text") {
    print_line("TOTAL", total);
  } else {
    const nlohmann::ordered_json doc = {{"collar", opt.collar}, {"files", files}, {"total", result_json(total)}};
    std::printf("%s\n", doc.dump(2).c_str());
  }
  return 0;
}

}  // namespace

Run add_der_command(CLI::App& app) {
  auto opt = std::make_shared<DerOptions>();
  CLI::App* cmd = app.add_subcommand("der", "Diarization error rate of a hypothesis RTTM against a reference RTTM");
  cmd->add_option("reference", opt->reference, "Reference RTTM")->required();
  cmd->add_option("hypothesis", opt->hypothesis, "Hypothesis RTTM (e.g. steno diarize's output)")->required();
  cmd->add_option("--collar", opt->collar, "Seconds around each reference edge left unscored (0.25: CALLHOME; 0: DIHARD)");
  cmd->add_option("-f,--format", opt->format, "Output: text or json");
  return [opt] { return run_der(*opt); };
}

}  // namespace steno::cli
