#include "core/weight_arena.h"

#include <algorithm>
#include <map>
#include <vector>

#include "steno/core/error.h"

namespace steno {
namespace {

constexpr uint64_t kFnvPrime = 1099511628211ull;

// What the process knows of arenas and scopes: the live arenas (for owns()), and per device the scope in force.
struct Registry {
  struct Scope {
    ArenaAllocator* arena = nullptr;  // a WeightArenaScope
    bool counting = false;            // a WeightCountingScope: count into these
    size_t counted_bytes = 0;
    LayoutFingerprint counted_layout;
  };
  std::mutex mu;
  std::vector<const ArenaAllocator*> arenas;
  std::map<int, Scope> scopes;
};

Registry& registry() {
  static auto* r = new Registry();  // leaked on purpose: weights may be freed during static destruction
  return *r;
}

void open_scope(int device, Registry::Scope scope, const char* what) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  STENO_CHECK(!r.scopes.count(device), "{} on cuda:{}: a weight scope is already active there (one at a time)",
              what, device);
  r.scopes[device] = scope;
}

void close_scope(int device) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.scopes.erase(device);
}

}  // namespace

void LayoutFingerprint::add(size_t bytes) {
  uint64_t v = bytes;
  for (int i = 0; i < 8; ++i) {  // the size's 8 bytes, little-endian, whatever the host's order
    hash_ ^= v & 0xff;
    hash_ *= kFnvPrime;
    v >>= 8;
  }
}

size_t ArenaAllocator::aligned(size_t bytes) {
  return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

ArenaAllocator::ArenaAllocator(Device device, void* base, size_t capacity)
    : device_(device), base_(static_cast<char*>(base)), capacity_(capacity) {
  STENO_CHECK(base != nullptr, "an arena needs memory");
  STENO_CHECK(reinterpret_cast<uintptr_t>(base) % kAlignment == 0, "an arena's memory must be {}-byte aligned",
              kAlignment);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.arenas.push_back(this);
}

ArenaAllocator::~ArenaAllocator() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.arenas.erase(std::remove(r.arenas.begin(), r.arenas.end(), this), r.arenas.end());
}

void* ArenaAllocator::allocate(size_t bytes) {
  const size_t n = aligned(bytes);
  std::lock_guard lock(mu_);
  if (n > capacity_ - used_)
    fail(ErrorCode::kResourceExhausted,
         "weight arena on {} is full: allocation {} of {} bytes does not fit in the {} bytes left of {} (the model "
         "asks for more than the arena was made for)",
         device_.str(), allocations_ + 1, bytes, capacity_ - used_, capacity_);
  void* p = base_ + used_;
  used_ += n;
  ++allocations_;
  layout_.add(bytes);
  return p;
}

size_t ArenaAllocator::used() const {
  std::lock_guard lock(mu_);
  return used_;
}

uint64_t ArenaAllocator::layout() const {
  std::lock_guard lock(mu_);
  return layout_.value();
}

size_t ArenaAllocator::allocations() const {
  std::lock_guard lock(mu_);
  return allocations_;
}

bool ArenaAllocator::owns(const void* p) {
  const char* c = static_cast<const char*>(p);
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const ArenaAllocator* a : r.arenas)
    if (c >= a->base_ && c < a->base_ + a->capacity_) return true;
  return false;
}

namespace cuda {

WeightArenaScope::WeightArenaScope(int device, ArenaAllocator& arena) : device_(device) {
  STENO_CHECK(arena.device() == Device::cuda(device), "a weight arena on {} cannot hold weights of cuda:{}",
              arena.device().str(), device);
  Registry::Scope s;
  s.arena = &arena;
  open_scope(device, s, "WeightArenaScope");
}

WeightArenaScope::~WeightArenaScope() { close_scope(device_); }

WeightCountingScope::WeightCountingScope(int device) : device_(device) {
  Registry::Scope s;
  s.counting = true;
  open_scope(device, s, "WeightCountingScope");
}

WeightCountingScope::~WeightCountingScope() { close_scope(device_); }

size_t WeightCountingScope::bytes() const {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.scopes.at(device_).counted_bytes;
}

uint64_t WeightCountingScope::layout() const {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.scopes.at(device_).counted_layout.value();
}

namespace detail {

void* weight_scope_allocate(int device, size_t bytes) {
  ArenaAllocator* arena = nullptr;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mu);
    const auto it = r.scopes.find(device);
    if (it == r.scopes.end()) return nullptr;
    if (it->second.counting) {
      it->second.counted_bytes += ArenaAllocator::aligned(bytes);
      it->second.counted_layout.add(bytes);
      return nullptr;
    }
    arena = it->second.arena;
  }
  return arena->allocate(bytes);  // outside the registry's lock: the arena has its own
}

}  // namespace detail
}  // namespace cuda
}  // namespace steno
