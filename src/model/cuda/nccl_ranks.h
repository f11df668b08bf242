// The collectives of tensor-parallel ranks that are GPUs of this process, one rank a device,
// through NCCL. libnccl.so.2 is loaded when a group is made, not linked, so a build or a run that
// never splits over GPUs needs no NCCL: from the path given, else CROSSPOINT_NCCL_LIBRARY, else
// the loader's search path, else the copy scripts/setup.sh keeps in the asset cache. NVLink
// multicast stays off (NCCL_NVLS_ENABLE=0) unless the environment already says otherwise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "model/cuda/tensor_parallel_comm.h"

struct ncclComm;  // nccl.h's communicator

namespace crosspoint::cuda {

struct NcclLibrary;

// NCCL's entry points, loaded from `library` (empty: the search above); the error names every
// file tried and why it failed.
Result<std::shared_ptr<const NcclLibrary>> load_nccl(const std::string& library = "");
// The file it came from and NCCL's version number (e.g. 22809 for 2.28.9).
const std::string& nccl_library_path(const NcclLibrary& nccl);
int nccl_version(const NcclLibrary& nccl);

class NcclRanks : public TensorParallelComm {
 public:
  // Rank r on devices[r]; the devices distinct and present. library: as load_nccl's.
  static Result<std::unique_ptr<NcclRanks>> create(const std::vector<int>& devices, const std::string& library = "");
  ~NcclRanks() override;
  NcclRanks(const NcclRanks&) = delete;
  NcclRanks& operator=(const NcclRanks&) = delete;

  int world_size() const override { return static_cast<int>(devices_.size()); }
  int device(int rank) const { return devices_[rank]; }
  const NcclLibrary& library() const { return *nccl_; }

  // Every rank makes the same calls in the same order, from a thread of its own, or all from one
  // thread inside every_rank(). Buffers live on the rank's device, the stream is one of its.
  // In place: data's n values (f32, f16 or bf16) become their sum over the ranks. With two ranks
  // each sum is one rounded addition, so the same bits on both and in every run.
  Status all_reduce_sum(int rank, void* data, int64_t n, DType dtype, cudaStream_t stream) override;
  // recv (world_size * n values) gets every rank's n values of send, rank 0's first.
  Status all_gather(int rank, const void* send, void* recv, int64_t n, DType dtype, cudaStream_t stream) override;
  // each(rank) for every rank from this thread, inside one NCCL group (as one thread driving
  // several devices must); the first error is returned after the group is closed.
  Status every_rank(const std::function<Status(int rank)>& each);

 private:
  NcclRanks(std::shared_ptr<const NcclLibrary> nccl, std::vector<int> devices);
  Status check_call(int rank, int64_t n, DType dtype, const char* what) const;

  std::shared_ptr<const NcclLibrary> nccl_;
  std::vector<int> devices_;
  std::vector<ncclComm*> comms_;  // [rank]
};

}  // namespace crosspoint::cuda
