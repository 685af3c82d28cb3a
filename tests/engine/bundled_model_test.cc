// The bundled model (models/steno-tdt-small-en) on its committed held-out test set (tests/data/testset), run the
// way a user runs it: `steno transcribe` with no --model (so the default-model lookup is tested too).
//   - as it decodes by default (its config.json names beam search with 4 hypotheses and its token LM, docs/engine.md
//     "Beam search and LM fusion"), every transcript equals the PyTorch reference's beam search
//     (reference_beam_lm_transcripts.tsv, tools/transcribe_ref.py);
//   - the same with greedy decoding (`--decoding greedy`), against reference_transcripts.tsv, with bars of their own;
//   - each synthesizer's WER (normalize_for_wer + word edit distance) stays within 1 point of the figure measured
//     when the model was trained (kSets, also in the README). The second edition trains on
//     five synthesizer families; the espeak-ng set speaks only with held-out voices, the flite, festival, MBROLA
//     and Pico sets each include one (awb, ked_diphone, mb-us3, en-GB) beside trained voices, and their
//     per-voice WERs are printed. The RHVoice set (a sixth family; alan held out) is measured the same way.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "asr/wer.h"

namespace steno::testing {
namespace {

namespace fs = std::filesystem;

// Each set's WER, measured for the committed model with this test's own computation (see the README's "Bundled
// model"), as the model decodes by default (beam search with 4 hypotheses, the bundled LM at the weights chosen on
// the validation set, tools/lm/README.md, and the lexicon's unknown-word penalty) and greedily; and the fewest words
// the set must have, so that a truncated set cannot pass.
struct SetFigures {
  const char* name;
  int min_words;
  double default_wer, greedy_wer;
};
constexpr SetFigures kSets[] = {
    {"espeak", 400, 0.0424, 0.0471}, {"flite", 200, 0.1308, 0.1500}, {"festival", 350, 0.1294, 0.1718},
    {"mbrola", 350, 0.1153, 0.1412}, {"pico", 350, 0.2329, 0.2729},  {"rhvoice", 350, 0.0612, 0.0729},
};

struct SetResult {
  std::map<std::string, std::string> hypotheses;  // audio_filepath -> text
  asr::WordErrors errors;
  std::map<std::string, asr::WordErrors> by_voice;  // the manifest's "voice", variant dropped -> its clips' errors
};

std::string run_capture(const std::string& cmd, int* exit_code) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// `extra`: more `steno transcribe` arguments.
SetResult transcribe_set(const std::string& name, const std::string& extra) {
  const fs::path dir = fs::path(STENO_TEST_DATA) / "testset" / name;
  std::vector<nlohmann::json> entries;
  std::ifstream manifest(dir / "manifest.jsonl");
  std::string cmd = std::string("env -u STENO_MODEL ") + STENO_BINARY + " transcribe --format json" + extra;
  for (std::string line; std::getline(manifest, line);) {
    entries.push_back(nlohmann::json::parse(line));
    cmd += " " + (dir / entries.back()["audio_filepath"].get<std::string>()).string();
  }
  int exit_code = -1;
  const std::string out = run_capture(cmd + " 2>/dev/null", &exit_code);
  EXPECT_EQ(exit_code, 0) << out.substr(0, 2000);
  SetResult r;
  if (exit_code != 0) return r;
  std::map<std::string, std::string> by_path;
  const nlohmann::json doc = nlohmann::json::parse(out);
  for (const auto& f : doc.at("files")) by_path[f.at("file").get<std::string>()] = f.at("text").get<std::string>();
  for (const auto& e : entries) {
    const std::string rel = e["audio_filepath"];
    const std::string key = (dir / rel).string();
    EXPECT_TRUE(by_path.count(key)) << key << " not in steno's output";
    const std::string hyp = by_path[key];
    r.hypotheses[rel] = hyp;
    const asr::WordErrors clip = asr::word_errors(e["text"].get<std::string>(), hyp);
    r.errors += clip;
    const std::string voice = e["voice"].get<std::string>();
    r.by_voice[voice.substr(0, voice.find('+'))] += clip;  // espeak-ng's base voice; the others' voice
  }
  return r;
}

std::map<std::string, std::string> reference_transcripts(const std::string& name, const std::string& file) {
  std::map<std::string, std::string> ref;
  std::ifstream in(fs::path(STENO_TEST_DATA) / "testset" / name / file);
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    if (tab != std::string::npos) ref[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return ref;
}

void expect_same_as_reference(const std::string& name, const std::string& file, const SetResult& r) {
  const auto ref = reference_transcripts(name, file);
  ASSERT_EQ(ref.size(), r.hypotheses.size()) << name;
  for (const auto& [path, text] : ref) EXPECT_EQ(r.hypotheses.at(path), text) << name << "/" << path;
}

enum class Decoding { kModelDefault, kGreedy };

// One synthesizer's held-out set: transcripts equal the PyTorch reference's, WER within a point of its figure.
void expect_set_within_bar(const std::string& name, Decoding decoding) {
  const auto set =
      std::find_if(std::begin(kSets), std::end(kSets), [&](const SetFigures& f) { return f.name == name; });
  ASSERT_NE(set, std::end(kSets)) << name;
  const bool greedy = decoding == Decoding::kGreedy;
  const SetResult r = transcribe_set(name, greedy ? " --decoding greedy" : "");
  expect_same_as_reference(name, greedy ? "reference_transcripts.tsv" : "reference_beam_lm_transcripts.tsv", r);
  std::printf("[ measured ] %s:\n",
              greedy ? "greedy decoding" : "the model's default decoding (beam search, LM, lexicon)");
  std::printf("[ measured ] %s WER %.2f %% (%d errors / %d words: %d sub, %d del, %d ins)\n", name.c_str(),
              100 * r.errors.rate(), r.errors.errors(), r.errors.reference_words, r.errors.substitutions,
              r.errors.deletions, r.errors.insertions);
  // A line a voice: the held-out ones beside the trained ones (espeak-ng's by base voice: its variants have a
  // clip or two each).
  for (const auto& [voice, e] : r.by_voice)
    std::printf("[ measured ]   %s: WER %.2f %% (%d errors / %d words)\n", voice.c_str(), 100 * e.rate(), e.errors(),
                e.reference_words);
  EXPECT_GT(r.errors.reference_words, set->min_words);
  EXPECT_LE(r.errors.rate(), (greedy ? set->greedy_wer : set->default_wer) + 0.01);
}

// What a user gets: the model's default decoding.
TEST(BundledModel, EspeakTestSet) { expect_set_within_bar("espeak", Decoding::kModelDefault); }
// flite's held-out voice is awb (Scottish English).
TEST(BundledModel, FliteTestSet) { expect_set_within_bar("flite", Decoding::kModelDefault); }
// festival's held-out voice is ked_diphone.
TEST(BundledModel, FestivalTestSet) { expect_set_within_bar("festival", Decoding::kModelDefault); }
// MBROLA's held-out voice is mb-us3 (American male), Pico's en-GB.
TEST(BundledModel, MbrolaTestSet) { expect_set_within_bar("mbrola", Decoding::kModelDefault); }
TEST(BundledModel, PicoTestSet) { expect_set_within_bar("pico", Decoding::kModelDefault); }
// RHVoice's held-out voice is alan (CMU ARCTIC's awb, the speaker of flite's held-out voice).
TEST(BundledModel, RhvoiceTestSet) { expect_set_within_bar("rhvoice", Decoding::kModelDefault); }

// NeMo's greedy decoding, which the engine's other tests and the GPU paths compare against.
TEST(BundledModel, EspeakGreedy) { expect_set_within_bar("espeak", Decoding::kGreedy); }
TEST(BundledModel, FliteGreedy) { expect_set_within_bar("flite", Decoding::kGreedy); }
TEST(BundledModel, FestivalGreedy) { expect_set_within_bar("festival", Decoding::kGreedy); }
TEST(BundledModel, MbrolaGreedy) { expect_set_within_bar("mbrola", Decoding::kGreedy); }
TEST(BundledModel, PicoGreedy) { expect_set_within_bar("pico", Decoding::kGreedy); }
TEST(BundledModel, RhvoiceGreedy) { expect_set_within_bar("rhvoice", Decoding::kGreedy); }

}  // namespace
}  // namespace steno::testing
