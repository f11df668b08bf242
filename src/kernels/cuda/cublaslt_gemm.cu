// cuBLASLt GEMM plans (fp16 or bf16, fp8 with outer-vector scales, fp8 unit scales + epilogue, fp8 with
// 128 x 128 weight and 1 x 128 activation block scales, int8 into int32 + epilogue).
#include <cuda_fp16.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/element16.cuh"

namespace crosspoint::cuda {

enum PlanKind {
  kPlanFp16 = 0,
  kPlanFp8OuterVec = 1,
  kPlanFp8Unit = 2,
  kPlanInt8 = 3,
  kPlanFp8Block = 4,
  kPlanBf16 = 5
};

struct CublasLtContext::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool has_algo = false;
  // int8 plans: the heuristic's other candidates, timed at the first call outside a graph
  // capture (every int8 algorithm gives the same exact int32 sums, so timing picks speed only).
  std::vector<cublasLtMatmulAlgo_t> candidates;
  bool tuned = false;
  ~Plan() {
    if (desc) cublasLtMatmulDescDestroy(desc);
    for (auto* layout : {a, b, c, d}) {
      if (layout) cublasLtMatrixLayoutDestroy(layout);
    }
  }
};

Result<std::unique_ptr<CublasLtContext>> CublasLtContext::create(size_t workspace_bytes) {
  std::unique_ptr<CublasLtContext> ctx(new CublasLtContext());
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&ctx->handle_), "create handle");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMalloc(&ctx->workspace_, workspace_bytes), "cublasLt workspace");
  ctx->workspace_bytes_ = workspace_bytes;
  return std::move(ctx);
}

CublasLtContext::~CublasLtContext() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

// key = (kind, m, n, k, a_ld = w_stride, b_ld = x_stride, d_ld = y_stride)
Result<CublasLtContext::Plan*> CublasLtContext::plan(const PlanKey& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second.get();
  const auto [kind, m, n, k, w_ld, x_ld, y_ld] = key;
  auto plan = std::make_unique<Plan>();
  const bool int8 = kind == kPlanInt8;
  const cudaDataType_t in_type = int8                ? CUDA_R_8I
                                 : kind == kPlanFp16 ? CUDA_R_16F
                                 : kind == kPlanBf16 ? CUDA_R_16BF
                                                     : CUDA_R_8F_E4M3;
  const cudaDataType_t out_type = int8                   ? CUDA_R_32I
                                  : kind == kPlanFp8Unit ? CUDA_R_32F
                                  : kind == kPlanBf16    ? CUDA_R_16BF
                                                         : CUDA_R_16F;
  // int8: exact int32 sums with int32 alpha and beta (IMMA kernels).
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescCreate(&plan->desc, int8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                               int8 ? CUDA_R_32I : CUDA_R_32F),
      "matmul desc");
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a), "transa");
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b), "transb");
  if (kind == kPlanFp8OuterVec || kind == kPlanFp8Block) {
    // A is the weight, B the activations: per channel and per token, or 128 x 128 weight blocks
    // and 1 x 128 activation groups.
    const int32_t a_mode = kind == kPlanFp8Block ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                                 : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    const int32_t b_mode =
        kind == kPlanFp8Block ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode, sizeof a_mode),
        "a scale mode");
    CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode, sizeof b_mode),
        "b scale mode");
    // The heuristic needs the pointers set to consider the scaled kernels; real ones are
    // set per call. Any non-null device-looking value works for the query.
    const void* placeholder = workspace_;
    CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                                     &placeholder, sizeof placeholder),
                                      "a scale");
    CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                                     &placeholder, sizeof placeholder),
                                      "b scale");
  }
  // Column-major: A = W as [K, N] with ld w_ld (transposed by op), B = X as [K, M], D [N, M].
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->a, in_type, k, n, w_ld), "layout a");
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->b, in_type, k, m, x_ld), "layout b");
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->c, out_type, n, m, y_ld), "layout c");
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan->d, out_type, n, m, y_ld), "layout d");

  cublasLtMatmulPreference_t pref = nullptr;
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref), "preference");
  const uint64_t ws = workspace_bytes_;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  // The heuristic's first choice for every kind; int8 keeps its next ones for int8_gemm_cublaslt
  // to time (at 128 rows the first is slower than FP16's GEMM on an H100).
  constexpr int kInt8Candidates = 8;
  cublasLtMatmulHeuristicResult_t results[kInt8Candidates]{};
  int found_count = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->c, plan->d,
                                                           pref, int8 ? kInt8Candidates : 1, results, &found_count);
  cublasLtMatmulPreferenceDestroy(pref);
  plan->has_algo = st == CUBLAS_STATUS_SUCCESS && found_count > 0 && results[0].state == CUBLAS_STATUS_SUCCESS;
  if (plan->has_algo) plan->algo = results[0].algo;
  for (int i = 0; plan->has_algo && int8 && i < found_count; ++i) {
    if (results[i].state == CUBLAS_STATUS_SUCCESS) plan->candidates.push_back(results[i].algo);
  }
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

namespace {

// alpha = 1 and beta = 0 in the plan's scale type (int32 for int8 plans, else fp32).
Status run_plan(CublasLtContext& ctx, CublasLtContext::Plan* plan, const void* a, const void* b, void* d,
                cudaStream_t stream, const char* what, bool int_scalars = false) {
  if (!plan->has_algo) return unsupported(std::string(what) + ": cuBLASLt has no algorithm for this shape");
  const float alpha = 1.0f, beta = 0.0f;
  const int32_t int_alpha = 1, int_beta = 0;
  const void* alpha_ptr = int_scalars ? static_cast<const void*>(&int_alpha) : &alpha;
  const void* beta_ptr = int_scalars ? static_cast<const void*>(&int_beta) : &beta;
  return cublas_status(cublasLtMatmul(ctx.handle(), plan->desc, alpha_ptr, a, plan->a, b, plan->b, beta_ptr, d, plan->c,
                                      d, plan->d, &plan->algo, ctx.workspace(), ctx.workspace_bytes(), stream),
                       what);
}

// y[m, n] = fp16(acc[m, n] * x_scale[m] * w_scale[n]); acc is the unit-scale GEMM [M, N] fp32.
__global__ void fp8_scale_epilogue_kernel(const float* __restrict__ acc, const float* __restrict__ x_scale,
                                          const float* __restrict__ w_scale, uint16_t* __restrict__ y, int64_t y_stride,
                                          int n) {
  const int row = blockIdx.y;
  const float s = x_scale[row];
  for (int col = blockIdx.x * blockDim.x + threadIdx.x; col < n; col += gridDim.x * blockDim.x) {
    y[row * y_stride + col] =
        __half_as_ushort(__float2half_rn(acc[static_cast<int64_t>(row) * n + col] * s * w_scale[col]));
  }
}

// y[m, n] = fp16((float(acc[m, n]) * x_scale[m]) * w_scale[n]); acc is the int8 GEMM [M, N] int32
// (n a multiple of 4: four columns a thread, one 16-byte load).
constexpr int kInt8EpilogueThreads = 256, kInt8EpilogueCols = 4 * kInt8EpilogueThreads;
__global__ void int8_scale_epilogue_kernel(const int32_t* __restrict__ acc, const float* __restrict__ x_scale,
                                           const float* __restrict__ w_scale, uint16_t* __restrict__ y,
                                           int64_t y_stride, int n) {
  const int row = blockIdx.y;
  const int col = blockIdx.x * kInt8EpilogueCols + 4 * threadIdx.x;
  if (col >= n) return;
  const float s = x_scale[row];
  const int4 sums = *reinterpret_cast<const int4*>(acc + static_cast<int64_t>(row) * n + col);
  const int32_t sum[4] = {sums.x, sums.y, sums.z, sums.w};
  uint16_t* out = y + row * y_stride + col;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    out[j] = __half_as_ushort(__float2half_rn(__fmul_rn(__fmul_rn(static_cast<float>(sum[j]), s), w_scale[col + j])));
  }
}

// Times each candidate algorithm of an int8 plan on the call's own operands (median of 3 runs
// after one warm-up) and keeps the fastest. Not during a graph capture: the plan stays untuned
// and the capture records the heuristic's choice.
Status tune_int8_plan(CublasLtContext& ctx, CublasLtContext::Plan* plan, const void* a, const void* b, void* d,
                      cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone) return Status::ok();
  plan->tuned = true;
  if (plan->candidates.size() < 2) return Status::ok();
  cudaEvent_t start = nullptr, stop = nullptr;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start), "cudaEventCreate");
  const cudaError_t created = cudaEventCreate(&stop);
  if (created != cudaSuccess) {
    (void)cudaEventDestroy(start);
    return cuda_status(created, "cudaEventCreate");
  }
  const int32_t alpha = 1, beta = 0;
  float best_ms = 1e30f;
  Status status = Status::ok();
  for (const cublasLtMatmulAlgo_t& algo : plan->candidates) {
    auto launch = [&] {
      return cublasLtMatmul(ctx.handle(), plan->desc, &alpha, a, plan->a, b, plan->b, &beta, d, plan->c, d, plan->d,
                            &algo, ctx.workspace(), ctx.workspace_bytes(), stream);
    };
    if (launch() != CUBLAS_STATUS_SUCCESS) continue;  // a candidate this shape refuses: not a failure
    float times[3];
    for (float& ms : times) {
      cudaError_t e = cudaEventRecord(start, stream);
      const bool ran = e == cudaSuccess && launch() == CUBLAS_STATUS_SUCCESS;
      if (e == cudaSuccess) e = cudaEventRecord(stop, stream);
      if (e == cudaSuccess) e = cudaEventSynchronize(stop);
      if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, start, stop);
      if (e != cudaSuccess) status = cuda_status(e, "timing int8 GEMM algorithms");
      if (!ran) ms = 1e30f;
    }
    if (!status.is_ok()) break;
    std::sort(times, times + 3);
    if (times[1] < best_ms) {
      best_ms = times[1];
      plan->algo = algo;
    }
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return status;
}

}  // namespace

Status fp16_gemm_cublaslt(CublasLtContext& ctx, const uint16_t* x, int64_t x_stride, const uint16_t* w,
                          int64_t w_stride, uint16_t* y, int64_t y_stride, int m, int n, int k, cudaStream_t stream,
                          DType dtype) {
  if (m == 0) return Status::ok();
  if (m < 0 || n <= 0 || k <= 0) return invalid_argument("fp16_gemm_cublaslt: bad shape");
  if (!is_element16(dtype)) return invalid_argument("fp16_gemm_cublaslt: dtype must be float16 or bfloat16");
  const int kind = dtype == DType::kBF16 ? kPlanBf16 : kPlanFp16;
  CROSSPOINT_ASSIGN_OR_RETURN(auto* plan, ctx.plan({kind, m, n, k, w_stride, x_stride, y_stride}));
  return run_plan(ctx, plan, w, x, y, stream, "fp16_gemm_cublaslt");
}

Result<Fp8ScalePath> fp8_scale_path(CublasLtContext& ctx, int m, int n, int k, int64_t xq_stride, int64_t w_stride,
                                    int64_t y_stride) {
  CROSSPOINT_ASSIGN_OR_RETURN(auto* plan, ctx.plan({kPlanFp8OuterVec, m, n, k, w_stride, xq_stride, y_stride}));
  return plan->has_algo ? Fp8ScalePath::kOuterVector : Fp8ScalePath::kEpilogue;
}

Status fp8_gemm_cublaslt(CublasLtContext& ctx, const uint8_t* xq, int64_t xq_stride, const float* x_scale,
                         const uint8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride,
                         int m, int n, int k, float* scratch, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || n <= 0 || k <= 0 || k % 16 != 0) {
    return unsupported("fp8_gemm_cublaslt: k = " + std::to_string(k) + " must be a positive multiple of 16");
  }
  if (xq_stride % 16 != 0 || w_stride % 16 != 0)
    return invalid_argument("fp8_gemm_cublaslt: strides must be multiples of 16 bytes");
  CROSSPOINT_ASSIGN_OR_RETURN(Fp8ScalePath path, fp8_scale_path(ctx, m, n, k, xq_stride, w_stride, y_stride));
  if (path == Fp8ScalePath::kOuterVector) {
    CROSSPOINT_ASSIGN_OR_RETURN(auto* plan, ctx.plan({kPlanFp8OuterVec, m, n, k, w_stride, xq_stride, y_stride}));
    // cuBLAS A is the weight (its rows are our N): A scale = w_scale [N]; B scale = x_scale [M].
    CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale),
        "a scale");
    CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof x_scale),
        "b scale");
    return run_plan(ctx, plan, wq, xq, y, stream, "fp8_gemm_cublaslt");
  }
  if (scratch == nullptr) return invalid_argument("fp8_gemm_cublaslt: the epilogue path needs an [M, N] fp32 scratch");
  CROSSPOINT_ASSIGN_OR_RETURN(auto* plan, ctx.plan({kPlanFp8Unit, m, n, k, w_stride, xq_stride, n}));
  CROSSPOINT_RETURN_IF_ERROR(run_plan(ctx, plan, wq, xq, scratch, stream, "fp8_gemm_cublaslt (unit scales)"));
  const dim3 grid((n + 255) / 256 < 8 ? (n + 255) / 256 : 8, m);
  fp8_scale_epilogue_kernel<<<grid, 256, 0, stream>>>(scratch, x_scale, w_scale, y, y_stride, n);
  return last_launch_status("fp8_scale_epilogue launch");
}

bool int8_gemm_available(CublasLtContext& ctx, int m, int n, int k) {
  if (m <= 0 || n <= 0 || k <= 0 || k % 4 != 0 || n % 4 != 0) return false;
  auto plan = ctx.plan({kPlanInt8, m, n, k, k, k, n});
  return plan.is_ok() && plan.value()->has_algo;
}

Status int8_gemm_cublaslt(CublasLtContext& ctx, const int8_t* xq, int64_t xq_stride, const float* x_scale,
                          const int8_t* wq, int64_t w_stride, const float* w_scale, uint16_t* y, int64_t y_stride,
                          int m, int n, int k, int32_t* scratch, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || n <= 0 || k <= 0 || k % 4 != 0 || n % 4 != 0) {
    return unsupported("int8_gemm_cublaslt: n = " + std::to_string(n) + " and k = " + std::to_string(k) +
                       " must be positive multiples of 4 (cuBLASLt's int8 kernels)");
  }
  if (xq_stride % 4 != 0 || w_stride % 4 != 0)
    return invalid_argument("int8_gemm_cublaslt: strides must be multiples of 4 bytes");
  if (scratch == nullptr) return invalid_argument("int8_gemm_cublaslt: needs an [M, N] int32 scratch");
  CROSSPOINT_ASSIGN_OR_RETURN(auto* plan, ctx.plan({kPlanInt8, m, n, k, w_stride, xq_stride, n}));
  if (plan->has_algo && !plan->tuned) CROSSPOINT_RETURN_IF_ERROR(tune_int8_plan(ctx, plan, wq, xq, scratch, stream));
  CROSSPOINT_RETURN_IF_ERROR(run_plan(ctx, plan, wq, xq, scratch, stream, "int8_gemm_cublaslt", /*int_scalars=*/true));
  const dim3 grid((n + kInt8EpilogueCols - 1) / kInt8EpilogueCols, m);
  int8_scale_epilogue_kernel<<<grid, kInt8EpilogueThreads, 0, stream>>>(scratch, x_scale, w_scale, y, y_stride, n);
  return last_launch_status("int8_scale_epilogue launch");
}

bool fp8_block_gemm_available(CublasLtContext& ctx, int m, int n, int k) {
  if (m <= 0 || m % 4 != 0 || n <= 0 || k <= 0 || k % 128 != 0 || n % 16 != 0) return false;
  auto plan = ctx.plan({kPlanFp8Block, m, n, k, k, k, n});
  return plan.is_ok() && plan.value()->has_algo;
}

Status fp8_block_gemm_cublaslt(CublasLtContext& ctx, const uint8_t* xq, const float* x_scale, const uint8_t* wq,
                               const float* w_scale, uint16_t* y, int m, int n, int k, cudaStream_t stream) {
  if (m == 0) return Status::ok();
  if (m < 0 || m % 4 != 0 || n <= 0 || k <= 0 || k % 128 != 0 || n % 16 != 0) {
    return unsupported("fp8_block_gemm_cublaslt: m = " + std::to_string(m) +
                       " must be a multiple of 4, n = " + std::to_string(n) + " of 16 and k = " + std::to_string(k) +
                       " of 128 (cuBLASLt's block-scaled FP8)");
  }
  CROSSPOINT_ASSIGN_OR_RETURN(auto* plan, ctx.plan({kPlanFp8Block, m, n, k, k, k, n}));
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale, sizeof w_scale),
      "a scale");
  CROSSPOINT_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale, sizeof x_scale),
      "b scale");
  return run_plan(ctx, plan, wq, xq, y, stream, "fp8_block_gemm_cublaslt");
}

}  // namespace crosspoint::cuda
