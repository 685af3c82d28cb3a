#include "steno/nemo/state_dict_pickle.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "steno/core/error.h"

namespace steno::nemo {
namespace {

struct Storage {
  std::string key;
  TorchType type = TorchType::kF32;
  int64_t numel = 0;
};

// One value on the machine's stack. Dicts are shared (the memo and the stack hold the same one, and SETITEMS fills
// it in place), so values are held by shared_ptr.
struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;                                   // kString; kGlobal: "module.name"
  std::vector<std::shared_ptr<Value>> items;       // kTuple, kList
  std::vector<std::pair<std::shared_ptr<Value>, std::shared_ptr<Value>>> dict;  // kDict, in insertion order
  Storage storage;                                 // kStorage
  TensorRef tensor;                                // kTensor (name unset)
};
using Ptr = std::shared_ptr<Value>;

const char* kind_name(Value::Kind k) {
  static constexpr std::array<const char*, 11> names{"None",  "bool", "int",    "float",   "str",   "tuple",
                                                     "list",  "dict", "global", "storage", "tensor"};
  return names[static_cast<size_t>(k)];
}

Ptr make(Value::Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

[[noreturn]] void bad_pickle(const std::string& why) {
  fail(ErrorCode::kInvalidArgument, "checkpoint pickle: {}", why);
}

// The storage classes a state dict's tensors name, and their element types.
std::optional<TorchType> storage_class(const std::string& global) {
  static const std::pair<const char*, TorchType> classes[] = {
      {"torch.DoubleStorage", TorchType::kF64}, {"torch.FloatStorage", TorchType::kF32},
      {"torch.HalfStorage", TorchType::kF16},   {"torch.BFloat16Storage", TorchType::kBF16},
      {"torch.LongStorage", TorchType::kI64},   {"torch.IntStorage", TorchType::kI32},
      {"torch.ShortStorage", TorchType::kI16},  {"torch.CharStorage", TorchType::kI8},
      {"torch.ByteStorage", TorchType::kU8},    {"torch.BoolStorage", TorchType::kBool},
  };
  for (const auto& [name, type] : classes)
    if (global == name) return type;
  return std::nullopt;
}

constexpr const char* kOrderedDict = "collections.OrderedDict";
constexpr const char* kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr const char* kRebuildParameter = "torch._utils._rebuild_parameter";

bool allowed_global(const std::string& g) {
  return g == kOrderedDict || g == kRebuildTensor || g == kRebuildParameter || storage_class(g).has_value();
}

class Machine {
 public:
  explicit Machine(std::span<const uint8_t> in) : in_(in) {}
  // A pickle can put a list or dict inside itself (through the memo): shared_ptr cycles, which would leak. Every
  // list and dict the machine made is emptied when it goes.
  ~Machine() {
    for (const Ptr& v : containers_) {
      v->items.clear();
      v->dict.clear();
    }
  }
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  Ptr run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: {  // PROTO
          const uint8_t v = byte();
          if (v < 2 || v > 5) bad_pickle(fmt::format("pickle protocol {} (a checkpoint uses 2 to 5)", v));
          break;
        }
        case 0x95: take(8); break;  // FRAME: a length hint only
        case '(': marks_.push_back(stack_.size()); break;
        case '.': {  // STOP
          Ptr result = pop();
          if (!stack_.empty() || !marks_.empty()) bad_pickle("values left on the stack at STOP");
          return result;
        }
        case 'N': push(make(Value::Kind::kNone)); break;
        case 0x88: push(boolean(true)); break;
        case 0x89: push(boolean(false)); break;
        case 'K': push(integer(byte())); break;
        case 'M': push(integer(static_cast<int64_t>(little(2)))); break;
        case 'J': push(integer(static_cast<int32_t>(little(4)))); break;
        case 0x8a: push(integer(long1())); break;
        case 'G': push(real()); break;
        case 'X': push(string(little(4))); break;
        case 0x8c: push(string(byte())); break;
        case 0x8d: push(string(little(8))); break;
        case ')': push(make(Value::Kind::kTuple)); break;
        case ']': push(make(Value::Kind::kList)); break;
        case '}': push(make(Value::Kind::kDict)); break;
        case 't': push(sequence(Value::Kind::kTuple, pop_mark())); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          const size_t n = op - 0x84;
          if (stack_.size() < n + floor()) bad_pickle("TUPLE past the stack's bottom");
          std::vector<Ptr> items(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(sequence(Value::Kind::kTuple, std::move(items)));
          break;
        }
        case 'l': push(sequence(Value::Kind::kList, pop_mark())); break;
        case 'a': {  // APPEND
          Ptr v = pop();
          expect(top(), Value::Kind::kList, "APPEND's target")->items.push_back(std::move(v));
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Ptr> items = pop_mark();
          auto& list = expect(top(), Value::Kind::kList, "APPENDS's target")->items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case 'd': {  // DICT
          const std::vector<Ptr> items = pop_mark();
          Ptr d = make(Value::Kind::kDict);
          set_items(*d, items);
          push(std::move(d));
          break;
        }
        case 's': {  // SETITEM
          Ptr v = pop(), k = pop();
          set_items(*expect(top(), Value::Kind::kDict, "SETITEM's target"), {k, v});
          break;
        }
        case 'u': {  // SETITEMS
          const std::vector<Ptr> items = pop_mark();
          set_items(*expect(top(), Value::Kind::kDict, "SETITEMS's target"), items);
          break;
        }
        case 'q': memo_[byte()] = top(); break;                  // BINPUT
        case 'r': memo_[little(4)] = top(); break;               // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break;          // MEMOIZE
        case 'h': push(memo(byte())); break;                     // BINGET
        case 'j': push(memo(little(4))); break;                  // LONG_BINGET
        case 'c': {  // GLOBAL "module\nname\n"
          std::string module = line(), name = line();
          push(global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          Ptr name = pop(), module = pop();
          push(global(expect(module, Value::Kind::kString, "STACK_GLOBAL's module")->s + "." +
                      expect(name, Value::Kind::kString, "STACK_GLOBAL's name")->s));
          break;
        }
        case 'Q': push(storage(pop())); break;  // BINPERSID
        case 'R': {  // REDUCE
          Ptr args = pop(), callable = pop();
          push(reduce(*expect(callable, Value::Kind::kGlobal, "REDUCE's callable"),
                      *expect(args, Value::Kind::kTuple, "REDUCE's arguments")));
          break;
        }
        case 'b': {  // BUILD: state set on an object; only an OrderedDict's attributes (state_dict()'s _metadata)
          pop();
          expect(top(), Value::Kind::kDict, "BUILD's object");
          break;
        }
        default:
          bad_pickle(fmt::format("opcode 0x{:02x} at byte {} is not one a state dict uses", op, at_ - 1));
      }
    }
  }

 private:
  uint8_t byte() {
    if (at_ >= in_.size()) bad_pickle("truncated (it ends without STOP)");
    return in_[at_++];
  }
  std::span<const uint8_t> take(uint64_t n) {
    if (n > in_.size() - at_)
      bad_pickle(fmt::format("truncated: {} bytes declared at byte {}, {} left", n, at_, in_.size() - at_));
    const auto s = in_.subspan(at_, n);
    at_ += n;
    return s;
  }
  uint64_t little(int n) {
    const auto b = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | b[static_cast<size_t>(k)];
    return v;
  }
  int64_t long1() {
    const uint8_t n = byte();
    if (n > 8) bad_pickle(fmt::format("an integer of {} bytes (at most 8 fit a tensor's sizes)", n));
    if (n == 0) return 0;
    uint64_t v = little(n);
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<int64_t>(v);
  }
  Ptr real() {
    const auto b = take(8);
    uint64_t bits = 0;
    for (uint8_t x : b) bits = (bits << 8) | x;  // big-endian
    Ptr v = make(Value::Kind::kFloat);
    std::memcpy(&v->f, &bits, sizeof bits);
    return v;
  }
  std::string line() {
    std::string s;
    for (uint8_t c = byte(); c != '\n'; c = byte()) {
      if (s.size() > 256) bad_pickle("a GLOBAL name over 256 bytes");
      s.push_back(static_cast<char>(c));
    }
    return s;
  }
  Ptr string(uint64_t n) {
    const auto b = take(n);
    Ptr v = make(Value::Kind::kString);
    v->s.assign(reinterpret_cast<const char*>(b.data()), b.size());
    return v;
  }
  static Ptr boolean(bool b) {
    Ptr v = make(Value::Kind::kBool);
    v->i = b;
    return v;
  }
  static Ptr integer(int64_t i) {
    Ptr v = make(Value::Kind::kInt);
    v->i = i;
    return v;
  }
  static Ptr sequence(Value::Kind k, std::vector<Ptr> items) {
    Ptr v = make(k);
    v->items = std::move(items);
    return v;
  }
  static Ptr global(const std::string& name) {
    if (!allowed_global(name))
      bad_pickle(fmt::format("it names '{}', which a state dict never uses: refused (a pickle can run any callable it "
                             "names)", name.substr(0, 128)));
    Ptr v = make(Value::Kind::kGlobal);
    v->s = name;
    return v;
  }
  static const Ptr& expect(const Ptr& v, Value::Kind k, const char* what) {
    if (v->kind != k) bad_pickle(fmt::format("{} is a {}, not a {}", what, kind_name(v->kind), kind_name(k)));
    return v;
  }
  static void set_items(Value& d, const std::vector<Ptr>& kv) {
    if (kv.size() % 2 != 0) bad_pickle("a dict's items are not key-value pairs");
    for (size_t k = 0; k < kv.size(); k += 2) d.dict.emplace_back(kv[k], kv[k + 1]);
  }

  // ('storage', torch.<Type>Storage, key, location, numel): a storage the archive holds as data/<key>.
  static Ptr storage(const Ptr& pid) {
    const auto& t = expect(pid, Value::Kind::kTuple, "a persistent id")->items;
    if (t.size() != 5 || t[0]->kind != Value::Kind::kString || t[0]->s != "storage")
      bad_pickle("a persistent id that is not ('storage', type, key, location, numel)");
    const std::optional<TorchType> type = storage_class(expect(t[1], Value::Kind::kGlobal, "a storage's type")->s);
    if (!type) bad_pickle(fmt::format("'{}' is not a storage type", t[1]->s));
    Ptr v = make(Value::Kind::kStorage);
    v->storage.key = expect(t[2], Value::Kind::kString, "a storage's key")->s;
    expect(t[3], Value::Kind::kString, "a storage's location");
    v->storage.numel = expect(t[4], Value::Kind::kInt, "a storage's size")->i;
    v->storage.type = *type;
    if (v->storage.numel < 0) bad_pickle(fmt::format("storage '{}' has {} elements", v->storage.key, v->storage.numel));
    return v;
  }

  static std::vector<int64_t> ints(const Ptr& v, const char* what) {
    std::vector<int64_t> out;
    for (const Ptr& x : expect(v, Value::Kind::kTuple, what)->items) {
      if (x->kind != Value::Kind::kInt || x->i < 0)
        bad_pickle(fmt::format("{} holds something other than sizes", what));
      out.push_back(x->i);
    }
    return out;
  }

  static Ptr reduce(const Value& callable, const Value& args) {
    const std::vector<Ptr>& a = args.items;
    if (callable.s == kOrderedDict) {
      if (!a.empty()) bad_pickle("OrderedDict called with arguments");
      return make(Value::Kind::kDict);
    }
    if (callable.s == kRebuildParameter) {  // (tensor, requires_grad, hooks): the tensor
      if (a.size() < 1) bad_pickle("_rebuild_parameter without a tensor");
      return expect(a[0], Value::Kind::kTensor, "_rebuild_parameter's data");
    }
    if (callable.s == kRebuildTensor) {  // (storage, offset, size, stride, requires_grad, hooks[, metadata])
      if (a.size() < 4) bad_pickle("_rebuild_tensor_v2 with fewer than 4 arguments");
      const Storage& s = expect(a[0], Value::Kind::kStorage, "a tensor's storage")->storage;
      Ptr v = make(Value::Kind::kTensor);
      TensorRef& t = v->tensor;
      t.storage_key = s.key;
      t.type = s.type;
      t.storage_numel = s.numel;
      t.offset = expect(a[1], Value::Kind::kInt, "a tensor's offset")->i;
      t.shape = ints(a[2], "a tensor's size");
      t.stride = ints(a[3], "a tensor's stride");
      if (t.offset < 0 || t.shape.size() != t.stride.size())
        bad_pickle(fmt::format("a tensor of storage '{}': offset {}, {} sizes and {} strides", s.key, t.offset,
                               t.shape.size(), t.stride.size()));
      // The last element it reaches must lie in its storage (an empty tensor reaches none).
      int64_t last = t.offset;
      bool empty = false;
      for (size_t k = 0; k < t.shape.size(); ++k) {
        if (t.shape[k] == 0) empty = true;
        if (t.shape[k] > 0 && t.stride[k] > (std::numeric_limits<int64_t>::max() - last) / t.shape[k])
          bad_pickle(fmt::format("a tensor of storage '{}' reaches past any storage", s.key));
        if (t.shape[k] > 0) last += (t.shape[k] - 1) * t.stride[k];
      }
      if (!empty && last >= s.numel)
        bad_pickle(fmt::format("a tensor reaches element {} of storage '{}', which holds {}", last, s.key, s.numel));
      return v;
    }
    bad_pickle(fmt::format("'{}' cannot be called here", callable.s));  // a storage class: only in a persistent id
  }

  void push(Ptr v) {
    if (v->kind == Value::Kind::kList || v->kind == Value::Kind::kDict) containers_.push_back(v);
    stack_.push_back(std::move(v));
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Ptr pop() {
    if (stack_.size() <= floor()) bad_pickle("a value popped past the stack's bottom or a MARK");
    Ptr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  const Ptr& top() const {
    if (stack_.size() <= floor()) bad_pickle("an empty stack where a value belongs");
    return stack_.back();
  }
  std::vector<Ptr> pop_mark() {
    if (marks_.empty()) bad_pickle("no MARK to pop to");
    const size_t from = marks_.back();
    marks_.pop_back();
    std::vector<Ptr> items(stack_.begin() + static_cast<ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return items;
  }
  Ptr memo(uint64_t k) const {
    const auto it = memo_.find(k);
    if (it == memo_.end()) bad_pickle(fmt::format("memo entry {} read before it was written", k));
    return it->second;
  }

  std::span<const uint8_t> in_;
  size_t at_ = 0;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ptr> memo_;
  std::vector<Ptr> containers_;  // every list and dict pushed (repeats included: bounded by the opcodes read)
};

}  // namespace

int torch_type_size(TorchType t) {
  switch (t) {
    case TorchType::kF64: case TorchType::kI64: return 8;
    case TorchType::kF32: case TorchType::kI32: return 4;
    case TorchType::kF16: case TorchType::kBF16: case TorchType::kI16: return 2;
    case TorchType::kI8: case TorchType::kU8: case TorchType::kBool: return 1;
  }
  return 0;
}

const char* torch_type_name(TorchType t) {
  switch (t) {
    case TorchType::kF64: return "DoubleStorage";
    case TorchType::kF32: return "FloatStorage";
    case TorchType::kF16: return "HalfStorage";
    case TorchType::kBF16: return "BFloat16Storage";
    case TorchType::kI64: return "LongStorage";
    case TorchType::kI32: return "IntStorage";
    case TorchType::kI16: return "ShortStorage";
    case TorchType::kI8: return "CharStorage";
    case TorchType::kU8: return "ByteStorage";
    case TorchType::kBool: return "BoolStorage";
  }
  return "?";
}

std::vector<TensorRef> read_state_dict_pickle(std::span<const uint8_t> pkl) {
  Machine machine(pkl);  // alive until the answer is copied out: it empties its containers when it goes
  const Ptr root = machine.run();
  if (root->kind != Value::Kind::kDict)
    bad_pickle(fmt::format("the checkpoint holds a {}, not a state dict", kind_name(root->kind)));
  std::vector<TensorRef> out;
  out.reserve(root->dict.size());
  for (const auto& [key, value] : root->dict) {
    if (key->kind != Value::Kind::kString) bad_pickle(fmt::format("a state dict key is a {}", kind_name(key->kind)));
    if (value->kind != Value::Kind::kTensor)
      bad_pickle(fmt::format("'{}' is a {}, not a tensor", key->s.substr(0, 128), kind_name(value->kind)));
    TensorRef t = value->tensor;
    t.name = key->s;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace steno::nemo
