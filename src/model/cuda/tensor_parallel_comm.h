// What a tensor-parallel rank of the CUDA model (cuda_model.h) needs from the other ranks: the
// sum of their partial outputs, in place, and the gather of their logits columns, on the rank's
// stream. NcclRanks (nccl_ranks.h) is the
// one for GPUs of this process; tests put two ranks on one GPU with a host-side sum.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype.h"
#include "common/status.h"

namespace crosspoint::cuda {

class TensorParallelComm {
 public:
  virtual ~TensorParallelComm() = default;
  virtual int world_size() const = 0;
  // Every rank calls with the same n and dtype, in the same order; data's n values (f32, f16
  // or bf16) become their sum over the ranks, the same bits on every rank.
  virtual Status all_reduce_sum(int rank, void* data, int64_t n, DType dtype, cudaStream_t stream) = 0;
  // recv (world_size * n values) gets every rank's n values of send, rank 0's first.
  virtual Status all_gather(int rank, const void* send, void* recv, int64_t n, DType dtype, cudaStream_t stream) = 0;
};

}  // namespace crosspoint::cuda
