// model_config.yaml read as PyYAML's safe_load reads it: YAML 1.1's implicit types for plain scalars (the values
// below are what PyYAML 6 gives), quoted scalars as strings, a repeated key's last value in its first place, and the
// bounds that keep a hostile document from being expanded.
#include <gtest/gtest.h>

#include <cmath>

#include "nemo/yaml_value.h"
#include "steno/core/error.h"

namespace steno::nemo {
namespace {

using Kind = YamlValue::Kind;

YamlValue value_of(const std::string& scalar) {
  const YamlValue doc = parse_yaml("k: " + scalar + "\n", "test.yaml");
  const YamlValue* v = doc.find("k");
  EXPECT_NE(v, nullptr) << scalar;
  return v ? *v : YamlValue{};
}

TEST(YamlValue, PlainScalarsTypedAsPyYamlTypesThem) {
  struct Want {
    const char* text;
    Kind kind;
    double number;  // kInt, kFloat, kBool (1/0)
  };
  const Want cases[] = {
      {"on", Kind::kBool, 1},      {"No", Kind::kBool, 0},        {"0x10", Kind::kInt, 16},
      {"1_000", Kind::kInt, 1000}, {"1:20", Kind::kInt, 80},       {"+12", Kind::kInt, 12},
      {"0b101", Kind::kInt, 5},    {"010", Kind::kInt, 8},         {"-7", Kind::kInt, -7},
      {"1.5e-3", Kind::kFloat, 0.0015}, {".5", Kind::kFloat, 0.5}, {"1:30.5", Kind::kFloat, 90.5},
      {"1.0e-05", Kind::kFloat, 1e-05}, {"-.inf", Kind::kFloat, -INFINITY},
  };
  for (const Want& w : cases) {
    const YamlValue v = value_of(w.text);
    EXPECT_EQ(v.kind, w.kind) << w.text;
    const double got = v.kind == Kind::kInt ? static_cast<double>(v.i) : v.kind == Kind::kBool ? v.b : v.f;
    EXPECT_EQ(got, w.number) << w.text;
  }
  EXPECT_TRUE(std::isnan(value_of(".NaN").f));
  for (const char* text : {"1e-5", "08", "0o7", "hann", "."}) {  // strings to PyYAML
    EXPECT_EQ(value_of(text).kind, Kind::kStr) << text;
    EXPECT_EQ(value_of(text).s, text);
  }
  for (const char* text : {"~", "null", "NULL", ""}) EXPECT_EQ(value_of(text).kind, Kind::kNull) << text;
  EXPECT_EQ(value_of("'on'").kind, Kind::kStr);
  EXPECT_EQ(value_of("\"12\"").s, "12");
  EXPECT_EQ(value_of("!!str 12").kind, Kind::kStr);
  EXPECT_EQ(value_of("!!float 3").f, 3.0);
}

TEST(YamlValue, RepeatedKeyKeepsItsPlaceAndTakesTheLastValue) {
  const YamlValue doc = parse_yaml("k: 1\nj: 3\nk: 2\n", "test.yaml");
  ASSERT_EQ(doc.keys.size(), 2u);
  EXPECT_EQ(doc.keys[0], "k");
  EXPECT_EQ(doc.items[0].i, 2);
  EXPECT_EQ(doc.find("j")->i, 3);
}

TEST(YamlValue, AliasesAreExpandedWithinBudget) {
  const YamlValue doc = parse_yaml("a: &x [1, 2]\nb: *x\n", "test.yaml");
  EXPECT_EQ(doc.find("b")->items.size(), 2u);
  YamlLimits small;
  small.max_nodes = 9;
  EXPECT_NO_THROW(parse_yaml("a: &x [1, 2]\nb: *x\n", "test.yaml", small));  // 9 values, keys included
  small.max_nodes = 8;
  EXPECT_THROW(parse_yaml("a: &x [1, 2]\nb: *x\n", "test.yaml", small), Error);
}

TEST(YamlValue, RefusesWhatSafeLoadRefusesOrStenoDoesNotRead) {
  for (const char* text : {"a: [1, 2\n", "a: 1\n---\nb: 2\n", "a: !!python/object:os.system x\n",
                           "a: &x {b: 1}\nc:\n  <<: *x\n", "a: 99999999999999999999\n"}) {
    try {
      parse_yaml(text, "test.yaml");
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << text;
      EXPECT_NE(std::string(e.what()).find("test.yaml"), std::string::npos) << e.what();
    }
  }
}

// yaml-cpp's LoadAll never returns on these (a stray ',' at the top level after a document: the parser reports a
// new document at every call); the reader counts at most two and refuses them (found by fuzzing).
TEST(YamlValue, AStrayCommaAtTheTopIsRefusedNotLoopedOn) {
  for (const char* text : {",", ",!mmm.nan", "- a\n,", "---\n,", " ,"}) {
    try {
      parse_yaml(text, "test.yaml");
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << text;
    }
  }
  EXPECT_EQ(parse_yaml("a: [1,\n 2]\n", "test.yaml").find("a")->items.size(), 2u);  // a flow's commas are fine
}

}  // namespace
}  // namespace steno::nemo
