// Green contexts (cuda.h) on the CUDA driver API, reached as driver_entry.h says (no libcuda link: a binary linked
// to libcuda.so.1 would not even start on a machine without the driver).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <mutex>
#include <string>
#include <vector>

#include "steno/core/cuda.h"
#include "steno/core/error.h"
#include "driver_entry.h"

namespace steno::cuda {
namespace {

// The driver entry points green contexts need, at the ABI version of the typedefs used (cuGreenCtxStreamCreate
// is the newest: CUDA 12.5).
struct Driver {
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuGetErrorName_v6000 error_name = nullptr;
  PFN_cuDeviceGetDevResource_v12040 get_resource = nullptr;
  PFN_cuDevSmResourceSplitByCount_v12040 split_by_count = nullptr;
  PFN_cuDevResourceGenerateDesc_v12040 generate_desc = nullptr;
  PFN_cuGreenCtxCreate_v12040 create = nullptr;
  PFN_cuGreenCtxDestroy_v12040 destroy = nullptr;
  PFN_cuGreenCtxStreamCreate_v12050 stream_create = nullptr;
  PFN_cuGreenCtxGetDevResource_v12040 green_get_resource = nullptr;
  std::vector<std::string> missing;  // symbols this driver lacks
};

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    driver_entry::resolve(r.device_get, "cuDeviceGet", 2000, r.missing);
    driver_entry::resolve(r.error_name, "cuGetErrorName", 6000, r.missing);
    driver_entry::resolve(r.get_resource, "cuDeviceGetDevResource", 12040, r.missing);
    driver_entry::resolve(r.split_by_count, "cuDevSmResourceSplitByCount", 12040, r.missing);
    driver_entry::resolve(r.generate_desc, "cuDevResourceGenerateDesc", 12040, r.missing);
    driver_entry::resolve(r.create, "cuGreenCtxCreate", 12040, r.missing);
    driver_entry::resolve(r.destroy, "cuGreenCtxDestroy", 12040, r.missing);
    driver_entry::resolve(r.stream_create, "cuGreenCtxStreamCreate", 12050, r.missing);
    driver_entry::resolve(r.green_get_resource, "cuGreenCtxGetDevResource", 12040, r.missing);
    return r;
  }();
  return d;
}

// The driver with every green-context entry point, after making `device` current with its primary context
// initialised (cuGreenCtxCreate advises it: otherwise each green context initialises and tears down the primary).
const Driver& driver_for(int device) {
  driver_entry::make_primary_current(device);
  const Driver& d = driver();
  if (!d.missing.empty()) {
    int version = 0;
    cudaDriverGetVersion(&version);
    fail(ErrorCode::kUnavailable,
         "green contexts are not available: the CUDA driver (version {}.{}) lacks {} (green contexts need a driver "
         "for CUDA 12.5 or newer)",
         version / 1000, version % 1000 / 10, driver_entry::joined(d.missing));
  }
  return d;
}

void check(const Driver& d, CUresult r, const char* what, int device) {
  if (r == CUDA_SUCCESS) return;
  const char* name = driver_entry::error_name(d.error_name, r);
  // Out of resources and MPS refusals are "cannot have it here", not bugs.
  const ErrorCode code = r == CUDA_ERROR_OUT_OF_MEMORY ? ErrorCode::kResourceExhausted : ErrorCode::kUnavailable;
  if (r == CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION)
    fail(code, "cuda:{}: {} failed ({}): the driver refuses this SM split; under MPS with "
         "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE below 100 every split fails: use --share green "
         "without MPS", device, what, name);
  fail(code, "cuda:{}: {} failed ({})", device, what, name);
}

CUdevResource device_sms(const Driver& d, int device, CUdevice* dev) {
  check(d, d.device_get(dev, device), "cuDeviceGet", device);
  CUdevResource all{};
  check(d, d.get_resource(*dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource", device);
  return all;
}

}  // namespace

struct GreenContext::State {
  int device = 0;
  int sms = 0;
  CUgreenCtx ctx = nullptr;
  ~State() {
    if (ctx != nullptr) driver().destroy(ctx);
  }
};

SmPartitioning sm_partitioning(int device) {
  const Driver& d = driver_for(device);
  CUdevice dev = 0;
  const CUdevResource all = device_sms(d, device, &dev);
  return {static_cast<int>(all.sm.smCount), static_cast<int>(all.sm.minSmPartitionSize),
          static_cast<int>(all.sm.smCoscheduledAlignment)};
}

GreenContext GreenContext::create(int device, int sms) {
  std::vector<GreenContext> one = partition(device, sms, 1);
  return std::move(one.front());
}

std::vector<GreenContext> GreenContext::partition(int device, int sms, int count) {
  return GreenPartition(device).carve(sms, count);
}

struct GreenPartition::State {
  int device = 0;
  int device_sms = 0;
  CUdevice dev = 0;
  std::mutex mu;
  // The SMs no carve has taken. The driver splits only a device's, a context's or a green context's resource, never
  // a split's remainder: before a second carve, the remainder becomes a green context of its own (`rest`, never
  // run on), whose resource is split instead.
  CUdevResource left{};
  bool left_is_remainder = false;
  CUgreenCtx rest = nullptr;
  ~State() {
    if (rest != nullptr) driver().destroy(rest);
  }
};

GreenPartition::GreenPartition(int device) : state_(std::make_shared<State>()) {
  const Driver& d = driver_for(device);
  state_->device = device;
  state_->left = device_sms(d, device, &state_->dev);
  state_->device_sms = static_cast<int>(state_->left.sm.smCount);
}

int GreenPartition::device() const { return state_->device; }

int GreenPartition::sms_left() const {
  std::lock_guard lock(state_->mu);
  return static_cast<int>(state_->left.sm.smCount);
}

std::vector<GreenContext> GreenPartition::carve(int sms, int count) {
  const Driver& d = driver();
  const int device = state_->device;
  std::lock_guard lock(state_->mu);
  STENO_CHECK(sms >= 1 && sms <= state_->device_sms, "a green context of {} SMs does not fit cuda:{}, which has {} SMs",
              sms, device, state_->device_sms);
  STENO_CHECK(count >= 1, "a green partition needs at least one context, got {}", count);
  const int left = static_cast<int>(state_->left.sm.smCount);
  if (left < sms * count)
    fail(ErrorCode::kUnavailable, "cuda:{}: cannot carve {} disjoint groups of {} SMs out of the {} of its {} not "
         "yet given to other green contexts", device, count, sms, left, state_->device_sms);

  if (state_->left_is_remainder) {  // a second carve: the remainder as a green context's resource
    CUdevResourceDesc desc = nullptr;
    CUgreenCtx rest = nullptr;
    check(d, d.generate_desc(&desc, &state_->left, 1), "cuDevResourceGenerateDesc", device);
    check(d, d.create(&rest, desc, state_->dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate", device);
    if (state_->rest != nullptr) d.destroy(state_->rest);
    state_->rest = rest;
    check(d, d.green_get_resource(rest, &state_->left, CU_DEV_RESOURCE_TYPE_SM), "cuGreenCtxGetDevResource", device);
    state_->left_is_remainder = false;
  }
  // One split into `count` groups: the driver hands out disjoint SM sets (rounded up to its granularity); what is
  // left over stays for the next carve.
  std::vector<CUdevResource> groups(static_cast<size_t>(count));
  CUdevResource remaining{};
  unsigned made = static_cast<unsigned>(count);
  check(d, d.split_by_count(groups.data(), &made, &state_->left, &remaining, 0, static_cast<unsigned>(sms)),
        "cuDevSmResourceSplitByCount", device);
  if (made != static_cast<unsigned>(count))
    fail(ErrorCode::kUnavailable, "cuda:{}: cannot carve {} disjoint groups of {} SMs out of {} (only {} fit)",
         device, count, sms, left, made);
  const CUdevice dev = state_->dev;
  state_->left = remaining;  // smCount 0 when nothing is left
  state_->left_is_remainder = true;

  std::vector<GreenContext> out;
  for (CUdevResource& group : groups) {
    CUdevResourceDesc desc = nullptr;
    check(d, d.generate_desc(&desc, &group, 1), "cuDevResourceGenerateDesc", device);
    auto state = std::make_shared<GreenContext::State>();
    state->device = device;
    state->sms = static_cast<int>(group.sm.smCount);
    check(d, d.create(&state->ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate", device);
    out.push_back(GreenContext(std::move(state)));
  }
  return out;
}

int GreenContext::device() const { return state_->device; }
int GreenContext::sm_count() const { return state_->sms; }

Stream GreenContext::make_stream() const {
  const Driver& d = driver();
  CUstream s = nullptr;
  // The stream belongs to the device's primary context (cuStreamGetCtx says so), so the runtime API, cuBLASLt and
  // stream-ordered pools use it like any stream; only its kernels are confined to the green context's SMs.
  check(d, d.stream_create(&s, state_->ctx, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate", state_->device);
  return Stream(state_->device, s, state_);
}

}  // namespace steno::cuda
