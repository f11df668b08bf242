#include "model/cuda/nccl_ranks.h"

#include <dlfcn.h>
#include <nccl.h>

#include <cstdlib>
#include <set>
#include <string>

#include "kernels/cuda/cuda_status.h"

namespace crosspoint::cuda {

struct NcclLibrary {
  std::string path;
  int version = 0;
  decltype(&ncclGetVersion) get_version = nullptr;
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclCommDestroy) comm_destroy = nullptr;
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclAllGather) all_gather = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
};

namespace {

template <class F>
bool bind(void* handle, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  return *out != nullptr;
}

// The library at `path`, or why not. The handle is never closed: communicators may outlive any
// one owner of the entry points.
Result<std::shared_ptr<const NcclLibrary>> open_library(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return unavailable(path + ": " + (why != nullptr ? why : "dlopen failed"));
  }
  auto nccl = std::make_shared<NcclLibrary>();
  nccl->path = path;
  const bool all =
      bind(handle, "ncclGetVersion", &nccl->get_version) && bind(handle, "ncclCommInitAll", &nccl->comm_init_all) &&
      bind(handle, "ncclCommDestroy", &nccl->comm_destroy) && bind(handle, "ncclAllReduce", &nccl->all_reduce) &&
      bind(handle, "ncclAllGather", &nccl->all_gather) && bind(handle, "ncclGroupStart", &nccl->group_start) &&
      bind(handle, "ncclGroupEnd", &nccl->group_end) && bind(handle, "ncclGetErrorString", &nccl->error_string);
  if (!all) return unavailable(path + ": not NCCL (an entry point is missing)");
  if (nccl->get_version(&nccl->version) != ncclSuccess) return unavailable(path + ": ncclGetVersion failed");
  if (nccl->version / 10000 != NCCL_MAJOR)
    return unavailable(path + ": NCCL " + std::to_string(nccl->version) + ", built against major version " +
                       std::to_string(NCCL_MAJOR));
  return std::shared_ptr<const NcclLibrary>(std::move(nccl));
}

Result<ncclDataType_t> nccl_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return ncclFloat32;
    case DType::kF16: return ncclFloat16;
    case DType::kBF16: return ncclBfloat16;
    default: return invalid_argument("NCCL collectives take f32, f16 or bf16, not " + std::string(dtype_name(dtype)));
  }
}

}  // namespace

Result<std::shared_ptr<const NcclLibrary>> load_nccl(const std::string& library) {
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates.push_back(library);
  } else if (const char* env = std::getenv("CROSSPOINT_NCCL_LIBRARY"); env != nullptr && *env != '\0') {
    candidates.push_back(env);
  } else {
    candidates = {"libnccl.so.2", CROSSPOINT_NCCL_CACHED_LIBRARY};
  }
  std::string tried;
  for (const std::string& path : candidates) {
    Result<std::shared_ptr<const NcclLibrary>> nccl = open_library(path);
    if (nccl.is_ok()) return nccl;
    tried += (tried.empty() ? "" : "; ") + nccl.status().message();
  }
  return unavailable("NCCL (libnccl.so.2) could not be loaded, which tensor parallelism over GPUs needs: " + tried +
                     ". Run scripts/setup.sh (it fetches PyPI's nvidia-nccl-cu13), install that wheel, or set "
                     "CROSSPOINT_NCCL_LIBRARY to the file");
}

const std::string& nccl_library_path(const NcclLibrary& nccl) { return nccl.path; }
int nccl_version(const NcclLibrary& nccl) { return nccl.version; }

Result<std::unique_ptr<NcclRanks>> NcclRanks::create(const std::vector<int>& devices, const std::string& library) {
  if (devices.empty()) return invalid_argument("NCCL ranks: no devices given");
  std::set<int> seen;
  for (int d : devices) {
    if (d < 0) return invalid_argument("NCCL ranks: device " + std::to_string(d) + " is not a device index");
    if (!seen.insert(d).second)
      return invalid_argument("NCCL ranks: device " + std::to_string(d) + " given twice (one rank a device)");
  }
  CROSSPOINT_ASSIGN_OR_RETURN(std::shared_ptr<const NcclLibrary> nccl, load_nccl(library));
  int count = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count), "NCCL ranks: counting the GPUs");
  for (int d : devices) {
    if (d >= count)
      return invalid_argument("NCCL ranks: device " + std::to_string(d) + " asked for, " + std::to_string(count) +
                              " present");
  }
  // Multicast can take a shared host's GPUs out of service when misused; off unless asked for.
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  std::unique_ptr<NcclRanks> ranks(new NcclRanks(std::move(nccl), devices));
  ranks->comms_.assign(devices.size(), nullptr);
  const ncclResult_t r =
      ranks->nccl_->comm_init_all(ranks->comms_.data(), static_cast<int>(devices.size()), devices.data());
  if (r != ncclSuccess) {
    ranks->comms_.clear();
    return internal_error(std::string("NCCL ranks: ncclCommInitAll over ") + std::to_string(devices.size()) +
                          " devices: " + ranks->nccl_->error_string(r));
  }
  return ranks;
}

NcclRanks::NcclRanks(std::shared_ptr<const NcclLibrary> nccl, std::vector<int> devices)
    : nccl_(std::move(nccl)), devices_(std::move(devices)) {}

NcclRanks::~NcclRanks() {
  for (ncclComm* comm : comms_)
    if (comm != nullptr) nccl_->comm_destroy(comm);
}

Status NcclRanks::check_call(int rank, int64_t n, DType dtype, const char* what) const {
  if (rank < 0 || rank >= world_size())
    return invalid_argument(std::string(what) + ": rank " + std::to_string(rank) + " of " +
                            std::to_string(world_size()));
  if (n < 0) return invalid_argument(std::string(what) + ": negative count " + std::to_string(n));
  const Result<ncclDataType_t> type = nccl_type(dtype);
  return type.is_ok() ? Status::ok() : type.status();
}

Status NcclRanks::all_reduce_sum(int rank, void* data, int64_t n, DType dtype, cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(check_call(rank, n, dtype, "NCCL all-reduce"));
  const ncclResult_t r =
      nccl_->all_reduce(data, data, static_cast<size_t>(n), nccl_type(dtype).value(), ncclSum, comms_[rank], stream);
  if (r != ncclSuccess)
    return internal_error("NCCL all-reduce on rank " + std::to_string(rank) + ": " + nccl_->error_string(r));
  return Status::ok();
}

Status NcclRanks::all_gather(int rank, const void* send, void* recv, int64_t n, DType dtype, cudaStream_t stream) {
  CROSSPOINT_RETURN_IF_ERROR(check_call(rank, n, dtype, "NCCL all-gather"));
  const ncclResult_t r =
      nccl_->all_gather(send, recv, static_cast<size_t>(n), nccl_type(dtype).value(), comms_[rank], stream);
  if (r != ncclSuccess)
    return internal_error("NCCL all-gather on rank " + std::to_string(rank) + ": " + nccl_->error_string(r));
  return Status::ok();
}

Status NcclRanks::every_rank(const std::function<Status(int rank)>& each) {
  ncclResult_t r = nccl_->group_start();
  if (r != ncclSuccess) return internal_error(std::string("NCCL group start: ") + nccl_->error_string(r));
  Status first = Status::ok();
  for (int rank = 0; rank < world_size(); ++rank) {
    Status st = each(rank);
    if (first.is_ok() && !st.is_ok()) first = std::move(st);
  }
  r = nccl_->group_end();
  if (first.is_ok() && r != ncclSuccess)
    return internal_error(std::string("NCCL group end: ") + nccl_->error_string(r));
  return first;
}

}  // namespace crosspoint::cuda
