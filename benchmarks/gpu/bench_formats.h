// The formats the engine serves beside the study's three, timed as the engine calls them: the
// 28 layers' linears of one Qwen2.5-7B step (no lm_head) per format and row count, each against
// FP16 cuBLASLt at the same rows (bench_gemm --formats-only, or part of its default run), then the
// 8-bit formats' activation quantisers alone at the same rows.
#pragma once

#include <cuda_runtime.h>

#include <nlohmann/json.hpp>

#include "kernels/cuda/cublaslt_gemm.h"

namespace crosspoint::bench {

// bw_gbps: the measured read ceiling the % of bandwidth is taken against. Returns
// {"linears": [...], "quantisers": [...]}.
nlohmann::json bench_formats(cuda::CublasLtContext& ctx, double bw_gbps, cudaStream_t s, int reps);

}  // namespace crosspoint::bench
