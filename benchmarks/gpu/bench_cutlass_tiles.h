// Every CUTLASS kernel of the 8-bit formats beside cuBLASLt, per Qwen2.5-7B step shape (fused
// qkv, o, fused gate_up, down) and rows, the GEMM alone (inputs already quantised): W8A8-FP8
// (cutlass_fp8_gemm's tiles), W8A8-INT8 (cutlass_int8_gemm's) and block-wise FP8
// (cutlass_fp8_block_gemm's). Each kernel's output is checked against cuBLASLt's first (int8:
// bit for bit; FP8: within fp32 summation order). The summary: per rows, every shape's fastest
// kernel and the 28 layers' total on that mix against the dispatch's choice
// (bench_gemm --cutlass-tiles [fp8,int8,fp8-block]).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/cuda/cublaslt_gemm.h"

namespace crosspoint::bench {

// operands: any of "fp8", "int8", "fp8-block". bw_gbps and tensor_tops: the measured read and
// 8-bit tensor ceilings each time is shown against.
nlohmann::json bench_cutlass_tiles(cuda::CublasLtContext& ctx, const std::vector<std::string>& operands, double bw_gbps,
                                   double tensor_tops, cudaStream_t s, int reps);

}  // namespace crosspoint::bench
