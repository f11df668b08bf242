// The GPU measurement of analysis/gpu_ceilings.h: device properties, HBM bandwidth with this
// file's own streaming kernels (16-byte loads and stores over buffers much larger than L2),
// device-to-device copy, and dense GEMM rates through cuBLASLt. Every figure: warm-up runs,
// then CUDA events around each timed run, median (and best) of the runs.
//
// Method notes, because the numbers are only as good as these choices:
// - read: each thread of a grid of (4, 8 or 16 blocks per SM) x 256 threads loads 4 int4 per
//   loop trip with ld.global.cg (L2 only) and folds them into a register; the best median of
//   the three grids is reported (the best grid depends on the GPU). A store guarded by a
//   condition that never holds keeps the loads alive.
// - the buffer is min(max_bandwidth_buffer_bytes, free memory / 4) so the read cannot be
//   served from L2 (50-60 MB on Hopper), and it is filled before timing (first touch).
// - GEMMs: y[M, N] = x[M, K] w[N, K]^T ("TN", the layout fp8 needs on Hopper), fp32
//   accumulation, fp16 out, random inputs (not zeros), the heuristic's first algorithm with a
//   32 MiB workspace. fp8: e4m3 in, unit tensor-wise scales (the tensor-core peak; the
//   engine's per-token x per-channel scales cost little on top). int8: int8 in, int32 sums and
//   out (the engine applies its scales in a separate epilogue).
#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/gpu_ceilings.h"

namespace crosspoint::analysis {
namespace {

Status cuda_check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::ok();
  return internal_error(std::string("gpu ceilings: ") + what + ": " + cudaGetErrorString(err));
}

Status cublas_check(cublasStatus_t err, const char* what) {
  if (err == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internal_error(std::string("gpu ceilings: cuBLASLt ") + what + ": status " +
                        std::to_string(static_cast<int>(err)));
}

#define GPU_CEILINGS_CUDA(expr, what) CROSSPOINT_RETURN_IF_ERROR(cuda_check((expr), (what)))
#define GPU_CEILINGS_CUBLAS(expr, what) CROSSPOINT_RETURN_IF_ERROR(cublas_check((expr), (what)))

// Device memory freed on every path out of the measurement.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  Status allocate(size_t n, const char* what) {
    bytes = n;
    return cuda_check(cudaMalloc(&ptr, n), what);
  }
};

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
  }
};

struct StreamHolder {
  cudaStream_t stream = nullptr;
  ~StreamHolder() {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

constexpr int kThreadsPerBlock = 256;
constexpr int kLoadsPerTrip = 4;  // int4 loads in flight per thread per loop trip

// Folds every 16-byte word of data[0, num_words) into a register. sink[0] is written only when
// the fold equals `never` (a value the fill cannot produce), which keeps the loads alive.
__global__ void stream_read_kernel(const int4* __restrict__ data, int64_t num_words, int4* sink, int never) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int fold = 0;
  for (; idx + (kLoadsPerTrip - 1) * stride < num_words; idx += kLoadsPerTrip * stride) {
    int4 v[kLoadsPerTrip];
#pragma unroll
    for (int u = 0; u < kLoadsPerTrip; ++u) v[u] = __ldcg(data + idx + u * stride);
#pragma unroll
    for (int u = 0; u < kLoadsPerTrip; ++u) fold ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; idx < num_words; idx += stride) {
    const int4 v = __ldcg(data + idx);
    fold ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (fold == never) sink[0] = make_int4(fold, 0, 0, 0);
}

// Writes `value` to every 16-byte word of data[0, num_words) with streaming stores.
__global__ void stream_write_kernel(int4* __restrict__ data, int64_t num_words, int value) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int4 v = make_int4(value, value + 1, value + 2, value + 3);
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < num_words; idx += stride) {
    __stcs(data + idx, v);
  }
}

__device__ uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// Pseudo-random fp16 values in [-1, 1).
__global__ void fill_fp16_kernel(__half* data, int64_t n, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    data[i] = __float2half(static_cast<float>(hash32(seed + i) >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

// Pseudo-random e4m3 bytes with exponent field <= 6 (|x| < 1), never the NaN pattern s1111111.
__global__ void fill_e4m3_kernel(uint8_t* data, int64_t n, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    data[i] = static_cast<uint8_t>(hash32(seed + i) & 0xB7u);
  }
}

// Runs `launch` num_warmups times untimed, then num_repeats times between events; returns
// the rate (work_units / seconds / 1e9 or 1e12 as the caller scales) of the median and best run.
template <typename Launch>
Result<GpuRate> time_runs(Launch launch, cudaStream_t stream, int num_warmups, int num_repeats, double work_per_run) {
  EventPair events;
  GPU_CEILINGS_CUDA(cudaEventCreate(&events.start), "cudaEventCreate");
  GPU_CEILINGS_CUDA(cudaEventCreate(&events.stop), "cudaEventCreate");
  for (int i = 0; i < num_warmups; ++i) CROSSPOINT_RETURN_IF_ERROR(launch());
  GPU_CEILINGS_CUDA(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> seconds;
  for (int i = 0; i < num_repeats; ++i) {
    GPU_CEILINGS_CUDA(cudaEventRecord(events.start, stream), "cudaEventRecord");
    CROSSPOINT_RETURN_IF_ERROR(launch());
    GPU_CEILINGS_CUDA(cudaEventRecord(events.stop, stream), "cudaEventRecord");
    GPU_CEILINGS_CUDA(cudaEventSynchronize(events.stop), "timed run");
    float ms = 0;
    GPU_CEILINGS_CUDA(cudaEventElapsedTime(&ms, events.start, events.stop), "cudaEventElapsedTime");
    seconds.push_back(std::max(1e-9, static_cast<double>(ms) * 1e-3));
  }
  GpuRate rate;
  rate.num_repeats = num_repeats;
  rate.median = work_per_run / median_of(seconds);
  rate.best = work_per_run / *std::min_element(seconds.begin(), seconds.end());
  return rate;
}

Status measure_bandwidth(const GpuMeasureOptions& o, int num_sms, cudaStream_t stream, GpuMeasurement& out) {
  size_t free_bytes = 0, total_bytes = 0;
  GPU_CEILINGS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  int64_t buffer_bytes = std::min<int64_t>(o.max_bandwidth_buffer_bytes, static_cast<int64_t>(free_bytes / 4));
  buffer_bytes = buffer_bytes / (1 << 20) * (1 << 20);  // whole MiB, so a multiple of 16
  if (buffer_bytes < (int64_t{16} << 20)) {             // 16 MiB each = 64 MiB free
    return resource_exhausted(
        "gpu ceilings: only " + std::to_string(free_bytes >> 20) +
        " MiB of GPU memory free; the bandwidth test needs 64 MiB (two buffers of a quarter each)");
  }
  out.bandwidth_buffer_bytes = buffer_bytes;
  const int64_t num_words = buffer_bytes / 16;
  DeviceBuffer a, b, sink;
  CROSSPOINT_RETURN_IF_ERROR(a.allocate(static_cast<size_t>(buffer_bytes), "cudaMalloc bandwidth buffer"));
  CROSSPOINT_RETURN_IF_ERROR(b.allocate(static_cast<size_t>(buffer_bytes), "cudaMalloc bandwidth buffer"));
  CROSSPOINT_RETURN_IF_ERROR(sink.allocate(16, "cudaMalloc sink"));
  const int fill_grid = num_sms * 8;
  // 0x01020304 + {0,1,2,3} per word: the xor-fold of any whole number of words never equals -1.
  stream_write_kernel<<<fill_grid, kThreadsPerBlock, 0, stream>>>(static_cast<int4*>(a.ptr), num_words, 0x01020304);
  GPU_CEILINGS_CUDA(cudaGetLastError(), "fill launch");
  const double bytes = static_cast<double>(buffer_bytes);

  for (int blocks_per_sm : {4, 8, 16}) {
    const int grid = num_sms * blocks_per_sm;
    auto read = [&]() -> Status {
      stream_read_kernel<<<grid, kThreadsPerBlock, 0, stream>>>(static_cast<const int4*>(a.ptr), num_words,
                                                                static_cast<int4*>(sink.ptr), -1);
      return cuda_check(cudaGetLastError(), "stream_read_kernel launch");
    };
    CROSSPOINT_ASSIGN_OR_RETURN(GpuRate rate,
                                time_runs(read, stream, o.num_warmups, o.num_bandwidth_repeats, bytes / 1e9));
    if (rate.median > out.read_bandwidth_gb_s.median) out.read_bandwidth_gb_s = rate;
  }
  auto write = [&]() -> Status {
    stream_write_kernel<<<num_sms * 8, kThreadsPerBlock, 0, stream>>>(static_cast<int4*>(b.ptr), num_words, 7);
    return cuda_check(cudaGetLastError(), "stream_write_kernel launch");
  };
  CROSSPOINT_ASSIGN_OR_RETURN(out.write_bandwidth_gb_s,
                              time_runs(write, stream, o.num_warmups, o.num_bandwidth_repeats, bytes / 1e9));
  auto copy = [&]() -> Status {
    return cuda_check(
        cudaMemcpyAsync(b.ptr, a.ptr, static_cast<size_t>(buffer_bytes), cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync device to device");
  };
  CROSSPOINT_ASSIGN_OR_RETURN(out.copy_bandwidth_gb_s,
                              time_runs(copy, stream, o.num_warmups, o.num_bandwidth_repeats, 2 * bytes / 1e9));
  return cuda_check(cudaStreamSynchronize(stream), "bandwidth");
}

// cuBLASLt descriptors of one TN GEMM, destroyed on every path out.
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~GemmPlan() {
    if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t layout : {a, b, c}) {
      if (layout != nullptr) cublasLtMatrixLayoutDestroy(layout);
    }
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
};

// y[M, N] fp16 = x[M, K] w[N, K]^T with x, w of `in_type` (fp16 or e4m3), M = N = K = size.
// Column-major for cuBLAS: A = w as K x N (ld K, transposed), B = x as K x M (ld K),
// D = y as N x M (ld N), the engine's own layout (kernels/cuda/cublaslt_gemm.h).
Result<GpuRate> time_gemm(cublasLtHandle_t handle, cudaDataType_t in_type, size_t in_elem_bytes, int64_t size,
                          const GpuMeasureOptions& o, cudaStream_t stream) {
  const size_t in_bytes = static_cast<size_t>(size) * size * in_elem_bytes;
  const bool int8 = in_type == CUDA_R_8I;
  const cudaDataType_t out_type = int8 ? CUDA_R_32I : CUDA_R_16F;
  DeviceBuffer x, w, y, workspace;
  CROSSPOINT_RETURN_IF_ERROR(x.allocate(in_bytes, "cudaMalloc GEMM x"));
  CROSSPOINT_RETURN_IF_ERROR(w.allocate(in_bytes, "cudaMalloc GEMM w"));
  CROSSPOINT_RETURN_IF_ERROR(y.allocate(static_cast<size_t>(size) * size * (int8 ? 4 : 2), "cudaMalloc GEMM y"));
  const size_t workspace_bytes = size_t{32} << 20;
  CROSSPOINT_RETURN_IF_ERROR(workspace.allocate(workspace_bytes, "cudaMalloc cuBLASLt workspace"));
  const int64_t n = size * size;
  if (in_type == CUDA_R_16F) {
    fill_fp16_kernel<<<1024, kThreadsPerBlock, 0, stream>>>(static_cast<__half*>(x.ptr), n, 1);
    fill_fp16_kernel<<<1024, kThreadsPerBlock, 0, stream>>>(static_cast<__half*>(w.ptr), n, 1ull << 40);
  } else {  // random bytes: e4m3 codes without NaN, or int8 values
    fill_e4m3_kernel<<<1024, kThreadsPerBlock, 0, stream>>>(static_cast<uint8_t*>(x.ptr), n, 1);
    fill_e4m3_kernel<<<1024, kThreadsPerBlock, 0, stream>>>(static_cast<uint8_t*>(w.ptr), n, 1ull << 40);
  }
  GPU_CEILINGS_CUDA(cudaGetLastError(), "GEMM input fill launch");

  GemmPlan plan;
  GPU_CEILINGS_CUBLAS(cublasLtMatmulDescCreate(&plan.desc, int8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                               int8 ? CUDA_R_32I : CUDA_R_32F),
                      "matmul desc");
  const cublasOperation_t trans_a = CUBLAS_OP_T, trans_b = CUBLAS_OP_N;
  GPU_CEILINGS_CUBLAS(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a),
                      "transa");
  GPU_CEILINGS_CUBLAS(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b),
                      "transb");
  GPU_CEILINGS_CUBLAS(cublasLtMatrixLayoutCreate(&plan.a, in_type, size, size, size), "layout a");
  GPU_CEILINGS_CUBLAS(cublasLtMatrixLayoutCreate(&plan.b, in_type, size, size, size), "layout b");
  GPU_CEILINGS_CUBLAS(cublasLtMatrixLayoutCreate(&plan.c, out_type, size, size, size), "layout c");
  GPU_CEILINGS_CUBLAS(cublasLtMatmulPreferenceCreate(&plan.pref), "preference");
  GPU_CEILINGS_CUBLAS(cublasLtMatmulPreferenceSetAttribute(plan.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &workspace_bytes, sizeof workspace_bytes),
                      "workspace preference");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int num_found = 0;
  GPU_CEILINGS_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, plan.desc, plan.a, plan.b, plan.c, plan.c, plan.pref, 1,
                                                     &heuristic, &num_found),
                      "algorithm heuristic");
  if (num_found == 0) return unsupported("gpu ceilings: cuBLASLt has no algorithm for this GEMM on this GPU");
  const float alpha = 1.0f, beta = 0.0f;
  const int32_t int_alpha = 1, int_beta = 0;  // int8 GEMMs take int32 scalars
  const void* alpha_ptr = int8 ? static_cast<const void*>(&int_alpha) : &alpha;
  const void* beta_ptr = int8 ? static_cast<const void*>(&int_beta) : &beta;
  auto gemm = [&]() -> Status {
    return cublas_check(cublasLtMatmul(handle, plan.desc, alpha_ptr, w.ptr, plan.a, x.ptr, plan.b, beta_ptr, y.ptr,
                                       plan.c, y.ptr, plan.c, &heuristic.algo, workspace.ptr, workspace_bytes, stream),
                        "matmul");
  };
  const double tflop = 2.0 * static_cast<double>(size) * size * size / 1e12;
  CROSSPOINT_ASSIGN_OR_RETURN(GpuRate rate, time_runs(gemm, stream, o.num_warmups, o.num_gemm_repeats, tflop));
  GPU_CEILINGS_CUDA(cudaStreamSynchronize(stream), "GEMM");
  return rate;
}

struct LtHandle {
  cublasLtHandle_t handle = nullptr;
  ~LtHandle() {
    if (handle != nullptr) cublasLtDestroy(handle);
  }
};

double attribute_mhz(cudaDeviceAttr attr, int device) {
  int khz = 0;
  return cudaDeviceGetAttribute(&khz, attr, device) == cudaSuccess ? khz / 1000.0 : 0;
}

}  // namespace

int gpu_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: not an error for the caller
    return 0;
  }
  return count;
}

Result<GpuMeasurement> measure_gpu(const GpuMeasureOptions& o) {
  const int num_devices = gpu_device_count();
  if (num_devices == 0) return unsupported("cannot measure a GPU: no CUDA GPU is visible on this machine");
  if (o.device_idx < 0 || o.device_idx >= num_devices) {
    return invalid_argument("gpu ceilings: device " + std::to_string(o.device_idx) + " does not exist (" +
                            std::to_string(num_devices) + " visible)");
  }
  if (o.gemm_size < 256 || o.gemm_size % 16 != 0 || o.num_bandwidth_repeats < 1 || o.num_gemm_repeats < 1 ||
      o.num_warmups < 0) {
    return invalid_argument("gpu ceilings: gemm_size must be a multiple of 16 >= 256 and the repeat counts positive");
  }
  GPU_CEILINGS_CUDA(cudaSetDevice(o.device_idx), "cudaSetDevice");
  cudaDeviceProp prop{};
  GPU_CEILINGS_CUDA(cudaGetDeviceProperties(&prop, o.device_idx), "cudaGetDeviceProperties");
  GpuMeasurement out;
  out.gpu_name = prop.name;
  out.compute_capability_major = prop.major;
  out.compute_capability_minor = prop.minor;
  out.num_sms = prop.multiProcessorCount;
  out.l2_cache_bytes = prop.l2CacheSize;
  out.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  out.memory_bus_width_bits = prop.memoryBusWidth;
  out.sm_clock_mhz = attribute_mhz(cudaDevAttrClockRate, o.device_idx);
  out.memory_clock_mhz = attribute_mhz(cudaDevAttrMemoryClockRate, o.device_idx);
  cudaRuntimeGetVersion(&out.cuda_runtime_version);
  cudaDriverGetVersion(&out.cuda_driver_version);
  out.measured_at_utc = utc_minute_now();
  size_t free_bytes = 0, total_bytes = 0;
  GPU_CEILINGS_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  out.free_memory_bytes = static_cast<int64_t>(free_bytes);

  StreamHolder stream;
  GPU_CEILINGS_CUDA(cudaStreamCreateWithFlags(&stream.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  CROSSPOINT_RETURN_IF_ERROR(measure_bandwidth(o, out.num_sms, stream.stream, out));

  LtHandle lt;
  GPU_CEILINGS_CUBLAS(cublasLtCreate(&lt.handle), "create handle");
  out.gemm_size = o.gemm_size;
  CROSSPOINT_ASSIGN_OR_RETURN(out.fp16_gemm_tflops, time_gemm(lt.handle, CUDA_R_16F, 2, o.gemm_size, o, stream.stream));
  const int sm = prop.major * 10 + prop.minor;
  if (sm >= 89) {
    auto fp8 = time_gemm(lt.handle, CUDA_R_8F_E4M3, 1, o.gemm_size, o, stream.stream);
    if (fp8.is_ok()) {
      out.fp8_gemm_tflops = fp8.value();
    } else {
      out.fp8_note = "fp8 GEMM failed: " + fp8.status().message();
      (void)cudaGetLastError();
    }
  } else {
    out.fp8_note = "sm_" + std::to_string(sm) + " has no fp8 tensor cores";
  }
  auto int8 = time_gemm(lt.handle, CUDA_R_8I, 1, o.gemm_size, o, stream.stream);
  if (int8.is_ok()) {
    out.int8_gemm_tops = int8.value();
  } else {
    out.int8_note = "int8 GEMM failed: " + int8.status().message();
    (void)cudaGetLastError();
  }
  const double buffer_gib = static_cast<double>(out.bandwidth_buffer_bytes) / (1 << 30);
  char method[512];
  std::snprintf(
      method, sizeof(method),
      "bandwidth = streaming read of a %.2f GiB buffer with 16-byte loads (best grid of 4/8/16 blocks per SM), "
      "median of %d event-timed runs; fp16/fp8/int8 = cuBLASLt %lld^3 TN GEMMs (fp32 accumulate, fp16 out, "
      "unit scales for fp8; int32 sums and out for int8), median of %d runs",
      buffer_gib, o.num_bandwidth_repeats, static_cast<long long>(o.gemm_size), o.num_gemm_repeats);
  out.method = method;
  return out;
}

}  // namespace crosspoint::analysis
