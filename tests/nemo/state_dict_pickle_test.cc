// The restricted unpickler (steno/nemo/state_dict_pickle.h) against Python's own reading of real checkpoint pickles
// (the reference .nemo files' and one made to cover every tensor form: tests/data/nemo-pickles), and against
// pickles that are not state dicts: code to run, unknown globals, truncation, tensors past their storage.
#include "steno/nemo/state_dict_pickle.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "nemo_test_util.h"
#include "steno/core/error.h"

namespace steno::nemo {
namespace {

using testing::bytes_of;
using testing::kPickles;

std::vector<uint8_t> bytes_of_string(const std::string& s) { return {s.begin(), s.end()}; }

// The message of the Error that reading `pkl` throws ("" when it does not throw).
std::string pickle_refusal(const std::vector<uint8_t>& pkl) { return testing::refusal(read_state_dict_pickle, pkl); }

class RealPickles : public ::testing::TestWithParam<const char*> {};

TEST_P(RealPickles, ReadAsPythonReadsThem) {
  const std::vector<TensorRef> got = read_state_dict_pickle(bytes_of(kPickles + GetParam() + ".pkl"));
  std::ifstream in(kPickles + GetParam() + ".json");
  const nlohmann::json want = nlohmann::json::parse(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    const TensorRef& t = got[k];
    const nlohmann::json& w = want[k];
    SCOPED_TRACE(w["name"].get<std::string>());
    EXPECT_EQ(t.name, w["name"]);
    EXPECT_EQ(t.storage_key, w["storage_key"]);
    EXPECT_EQ(torch_type_name(t.type), w["type"]);
    EXPECT_EQ(t.storage_numel, w["storage_numel"]);
    EXPECT_EQ(t.offset, w["offset"]);
    EXPECT_EQ(t.shape, w["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.stride, w["stride"].get<std::vector<int64_t>>());
  }
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, RealPickles, ::testing::Values("nemo-tiny", "sortformer-tiny", "made"));

TEST(StateDictPickle, CodeToRunIsRefusedNamingIt) {
  // pickle.dumps of an object whose __reduce__ is (os.system, ("ls",)), protocol 2.
  const std::string system = std::string("\x80\x02" "cposix\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.", 34);
  EXPECT_NE(pickle_refusal(bytes_of_string(system)).find("'posix.system'"), std::string::npos);
  const std::string eval = std::string("\x80\x02" "cbuiltins\neval\nX\x04\x00\x00\x001+1q\x85R.", 31);
  EXPECT_NE(pickle_refusal(bytes_of_string(eval)).find("'builtins.eval'"), std::string::npos);
  // Protocol 4's STACK_GLOBAL is checked the same way.
  const std::string stack_global = std::string("\x80\x04\x8c\x02os\x8c\x06system\x93)R.", 16);
  EXPECT_NE(pickle_refusal(bytes_of_string(stack_global)).find("'os.system'"), std::string::npos);
}

TEST(StateDictPickle, OpcodesAStateDictNeverUsesAreRefused) {
  // INST (a class instantiated by name) and NEWOBJ.
  EXPECT_NE(pickle_refusal(bytes_of_string("\x80\x02(iposix\nsystem\n.")).find("opcode 0x69"), std::string::npos);
  EXPECT_NE(pickle_refusal(bytes_of_string(std::string("\x80\x02)\x81.", 5))).find("opcode 0x81"), std::string::npos);
}

TEST(StateDictPickle, EveryTruncationIsAClearError) {
  const std::vector<uint8_t> whole = bytes_of(kPickles + "made.pkl");
  for (size_t n = 0; n < whole.size(); ++n) {
    const std::string why = pickle_refusal({whole.begin(), whole.begin() + static_cast<ptrdiff_t>(n)});
    EXPECT_FALSE(why.empty()) << "a pickle cut to " << n << " bytes was read";
  }
}

// Pickles written opcode by opcode (protocol 2), for the cases no torch.save makes.
// (Strings are appended, not added to literals: GCC 12 warns falsely about `"literal" + std::string`.)
std::string str(const std::string& s) {  // BINUNICODE
  const auto n = static_cast<uint32_t>(s.size());
  std::string out("X");
  out.append(reinterpret_cast<const char*>(&n), 4).append(s);
  return out;
}
std::string glob(const std::string& module, const std::string& name) {
  return std::string("c").append(module).append("\n").append(name).append("\n");
}
std::string int1(int v) { return std::string("K") + static_cast<char>(v); }
std::vector<uint8_t> pickle(const std::string& body) {
  const std::string p = std::string("\x80\x02").append(body).append(".");
  return {p.begin(), p.end()};
}

TEST(StateDictPickle, ATensorPastItsStorageIsRefused) {
  // {'w': _rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', 6), offset, (rows, cols), (cols, 1), False,
  // OrderedDict())}
  const auto tensor_of = [](int offset, int rows, int cols) {
    std::string p("}");
    p.append(str("w")).append(glob("torch._utils", "_rebuild_tensor_v2")).append("((").append(str("storage"));
    p.append(glob("torch", "FloatStorage")).append(str("0")).append(str("cpu")).append(int1(6)).append("tQ");
    p.append(int1(offset)).append(int1(rows)).append(int1(cols)).append("\x86").append(int1(cols)).append(int1(1));
    p.append("\x86\x89").append(glob("collections", "OrderedDict")).append(")RtRs");
    return pickle(p);
  };
  const std::vector<TensorRef> fits = read_state_dict_pickle(tensor_of(0, 2, 3));
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].name, "w");
  EXPECT_EQ(fits[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(fits[0].stride, (std::vector<int64_t>{3, 1}));
  EXPECT_NE(pickle_refusal(tensor_of(1, 2, 3)).find("reaches element 6 of storage '0', which holds 6"),
            std::string::npos);
  EXPECT_NE(pickle_refusal(tensor_of(0, 3, 3)).find("reaches element 8"), std::string::npos);
}

TEST(StateDictPickle, WhatIsNotAStateDictOfTensorsIsRefused) {
  EXPECT_NE(pickle_refusal(pickle("]")).find("holds a list, not a state dict"), std::string::npos);
  EXPECT_NE(
      pickle_refusal(pickle(std::string("}").append(str("a")).append(int1(1)).append("s"))).find("'a' is a int, not"),
      std::string::npos);
  EXPECT_NE(pickle_refusal(pickle(std::string("}").append(int1(1)).append(int1(1)).append("s"))).find("key is a int"),
            std::string::npos);
  EXPECT_NE(pickle_refusal(pickle(std::string("h") + static_cast<char>(5))).find("memo entry 5 read before"),
            std::string::npos);
  EXPECT_NE(pickle_refusal(pickle(int1(1).append(int1(2)))).find("left on the stack"), std::string::npos);
  // A storage class called, instead of named in a persistent id.
  EXPECT_NE(pickle_refusal(pickle(glob("torch", "FloatStorage").append(")R"))).find("cannot be called here"),
            std::string::npos);
  // A dict put inside itself through the memo (a cycle: no leak under the sanitizers, fuzz/run.sh), then refused.
  std::string cycle("}q");
  cycle.push_back('\0');
  cycle.append(str("self")).append("h").push_back('\0');
  cycle.append("s");
  EXPECT_NE(pickle_refusal(pickle(cycle)).find("'self' is a dict"), std::string::npos);
  // A length far past the end (a 4 GiB string declared in a few bytes) is truncation, not an allocation.
  EXPECT_NE(pickle_refusal(pickle("X\xff\xff\xff\xff")).find("truncated"), std::string::npos);
}

}  // namespace
}  // namespace steno::nemo
