// bench_formats.h: FP16, BF16, W8A8-FP8 (per channel), block-wise FP8 (128 x 128; and again on
// cuBLASLt alone at the rows CUTLASS takes), W8A8-INT8 (and again on cuBLASLt alone at the rows
// CUTLASS takes), W4A16 (symmetric) and W4A16 with zero points, each through the call run_cuda_linear makes, with
// random weights in the format's device layout (one copy per layer: every launch streams them).
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gpu/bench_formats.h"
#include "gpu/fill_random.h"
#include "gpu/graph_timing.h"
#include "kernels/cuda/fp8_block_quant.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/int8_quant.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/w4a16_dequantize.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace crosspoint::bench {
namespace {

enum class Format { kFp16, kBf16, kFp8, kFp8Block, kFp8BlockCublas, kInt8, kInt8Cublas, kW4A16, kW4A16Zeros };
constexpr Format kFormats[] = {Format::kFp16,       Format::kBf16,           Format::kFp8,
                               Format::kFp8Block,   Format::kFp8BlockCublas, Format::kInt8,
                               Format::kInt8Cublas, Format::kW4A16,          Format::kW4A16Zeros};
const char* format_name(Format f) {
  switch (f) {
    case Format::kFp16: return "fp16";
    case Format::kBf16: return "bf16";
    case Format::kFp8: return "w8a8-fp8";
    case Format::kFp8Block: return "w8a8-fp8-block128";
    case Format::kFp8BlockCublas: return "fp8-block128-cublas";
    case Format::kInt8: return "w8a8-int8";
    case Format::kInt8Cublas: return "w8a8-int8-cublaslt";
    case Format::kW4A16: return "w4a16-g128";
    case Format::kW4A16Zeros: return "w4a16-g128-zeros";
  }
  return "?";
}
constexpr int kGroup = 128;
constexpr int kLayers = 28, kHidden = 3584, kInter = 18944, kQkv = 4608;
constexpr int kMaxRows = 2048, kMaxK = kInter, kMaxN = 2 * kInter;

struct FormatLinear {
  int n = 0, k = 0;
  void* weight = nullptr;
  void* scales = nullptr;
  void* zeros = nullptr;
  void* scales_m64 = nullptr;  // block FP8: the scales in the CUTLASS layout (null: cuBLASLt alone)
  double bytes = 0;            // weight bytes one pass reads
};

FormatLinear make(Format f, int n, int k, uint32_t seed, cudaStream_t s) {
  FormatLinear l{n, k};
  const size_t nk = static_cast<size_t>(n) * k;
  const size_t groups = static_cast<size_t>(k / kGroup);
  switch (f) {
    case Format::kFp16:
    case Format::kBf16:  // fp16 bits read as bf16 are finite too: only speed is measured
      BENCH_CUDA(cudaMalloc(&l.weight, nk * 2));
      fill_f16(static_cast<uint16_t*>(l.weight), nk, -0.05f, 0.05f, seed, s);
      l.bytes = 2.0 * nk;
      break;
    case Format::kFp8:
    case Format::kInt8:
    case Format::kInt8Cublas:
      BENCH_CUDA(cudaMalloc(&l.weight, nk));
      BENCH_CUDA(cudaMalloc(&l.scales, static_cast<size_t>(n) * 4));
      if (f == Format::kFp8) {
        fill_e4m3(static_cast<uint8_t*>(l.weight), nk, seed, s);
      } else {
        fill_u32(static_cast<uint32_t*>(l.weight), nk / 4, seed, s);  // any byte is an int8
      }
      fill_f32(static_cast<float*>(l.scales), n, 1e-4f, 1e-3f, seed + 1, s);
      l.bytes = 1.0 * nk + 4.0 * n;
      break;
    case Format::kFp8Block:
    case Format::kFp8BlockCublas: {
      const size_t scales = static_cast<size_t>((n + 127) / 128) * cuda::fp8_block_weight_scale_row(k);
      BENCH_CUDA(cudaMalloc(&l.weight, nk));
      BENCH_CUDA(cudaMalloc(&l.scales, scales * 4));
      fill_e4m3(static_cast<uint8_t*>(l.weight), nk, seed, s);
      fill_f32(static_cast<float*>(l.scales), scales, 1e-4f, 1e-3f, seed + 1, s);
      l.bytes = 1.0 * nk + 4.0 * scales;
      if (f == Format::kFp8Block) {  // the CUTLASS layout of the scales (random too: only speed is measured)
        const size_t m64 = static_cast<size_t>((n + 63) / 64) * (k / 128);
        BENCH_CUDA(cudaMalloc(&l.scales_m64, m64 * 4));
        fill_f32(static_cast<float*>(l.scales_m64), m64, 1e-4f, 1e-3f, seed + 3, s);
      }
      break;
    }
    case Format::kW4A16:
    case Format::kW4A16Zeros: {
      BENCH_CUDA(cudaMalloc(&l.weight, nk / 2));
      BENCH_CUDA(cudaMalloc(&l.scales, groups * n * 2));
      fill_u32(static_cast<uint32_t*>(l.weight), nk / 8, seed, s);
      fill_f16(static_cast<uint16_t*>(l.scales), groups * n, 0.002f, 0.02f, seed + 1, s);
      l.bytes = 0.5 * nk + 2.0 * groups * n;
      if (f == Format::kW4A16Zeros) {  // half2 (1024 + z, 1024 + z') with z in 0..15, as w4a16_pack_zeros writes
        std::vector<uint32_t> zeros(groups * n / 2);
        std::mt19937 rng(seed + 2);
        for (auto& z : zeros) z = (0x6400u + rng() % 16) | (0x6400u + rng() % 16) << 16;
        BENCH_CUDA(cudaMalloc(&l.zeros, zeros.size() * 4));
        BENCH_CUDA(cudaMemcpy(l.zeros, zeros.data(), zeros.size() * 4, cudaMemcpyHostToDevice));
        l.bytes += 2.0 * groups * n;
      }
      break;
    }
  }
  return l;
}

void release(FormatLinear& l) {
  cudaFree(l.weight);
  cudaFree(l.scales);
  cudaFree(l.zeros);
  cudaFree(l.scales_m64);
}

struct Scratch {
  uint16_t* x = nullptr;       // [kMaxRows, kMaxK] fp16
  uint8_t* xq = nullptr;       // [kMaxRows, kMaxK] e4m3 or int8
  float* x_scale = nullptr;    // [kMaxRows] (or [kMaxK / 128, kMaxRows] block scales)
  uint16_t* y = nullptr;       // [kMaxRows, kMaxN] fp16
  int32_t* sums = nullptr;     // [kMaxRows, kMaxN] int32 (int8) / f32 (fp8 epilogue path)
  uint16_t* w_fp16 = nullptr;  // the largest layer dequantised (W4A16 from kW4A16DequantMinRows rows)
};

// What run_cuda_linear calls for this format at m rows.
Status run(cuda::CublasLtContext& ctx, const Scratch& b, Format f, const FormatLinear& l, int m, cudaStream_t s) {
  const int n = l.n, k = l.k;
  switch (f) {
    case Format::kFp16:
      return cuda::fp16_linear(ctx, b.x, k, static_cast<const uint16_t*>(l.weight), k, b.y, n, m, n, k, s);
    case Format::kBf16:
      return cuda::fp16_linear(ctx, b.x, k, static_cast<const uint16_t*>(l.weight), k, b.y, n, m, n, k, s,
                               DType::kBF16);
    case Format::kFp8:
      return cuda::fp8_linear_from_fp16(ctx, b.x, k, b.xq, k, b.x_scale, static_cast<const uint8_t*>(l.weight), k,
                                        static_cast<const float*>(l.scales), b.y, n, m, n, k,
                                        reinterpret_cast<float*>(b.sums), s);
    case Format::kFp8Block:
    case Format::kFp8BlockCublas:
      return cuda::fp8_block_linear_from_fp16(ctx, b.x, b.xq, b.x_scale, static_cast<const uint8_t*>(l.weight),
                                              static_cast<const float*>(l.scales), b.y, m, n, k, s,
                                              static_cast<const float*>(l.scales_m64));
    case Format::kInt8:
    case Format::kInt8Cublas:
      return cuda::int8_linear_from_fp16(ctx, b.x, k, reinterpret_cast<int8_t*>(b.xq), k, b.x_scale, nullptr,
                                         static_cast<const int8_t*>(l.weight), k, static_cast<const float*>(l.scales),
                                         b.y, n, m, n, k, b.sums, s);
    case Format::kW4A16:
    case Format::kW4A16Zeros: {
      const auto* w = static_cast<const uint32_t*>(l.weight);
      const auto* sc = static_cast<const uint32_t*>(l.scales);
      const auto* z = static_cast<const uint32_t*>(l.zeros);
      if (m >= cuda::kW4A16DequantMinRows) {
        CROSSPOINT_RETURN_IF_ERROR(cuda::w4a16_dequantize(w, sc, n, k, kGroup, b.w_fp16, k, s, z));
        return cuda::fp16_linear(ctx, b.x, k, b.w_fp16, k, b.y, n, m, n, k, s);
      }
      return cuda::w4a16_gemm(b.x, k, w, sc, b.y, n, m, n, k, kGroup, s, z);
    }
  }
  return internal_error("bench_formats: unknown format");
}

// The activation quantiser each 8-bit format runs before its GEMM, alone: the 28 layers' four
// linears' inputs (k = hidden three times, intermediate once) at m rows.
Status quantise(const Scratch& b, Format f, int m, int k, cudaStream_t s) {
  switch (f) {
    case Format::kFp8: return cuda::fp8_quantize_per_token(b.x, k, b.xq, k, b.x_scale, m, k, s);
    case Format::kInt8:
      return cuda::int8_quantize_per_token(b.x, k, reinterpret_cast<int8_t*>(b.xq), k, b.x_scale, m, k, s);
    case Format::kFp8Block:
      return cuda::fp8_quantize_per_token_group(b.x, k, b.xq, k, b.x_scale, cuda::fp8_block_padded_rows(m), m, k, s);
    default: return internal_error("bench_formats: no activation quantiser for this format");
  }
}

nlohmann::json bench_quantisers(const Scratch& b, const int* rows, size_t n_rows, double bw_gbps, cudaStream_t s,
                                int reps) {
  nlohmann::json out = nlohmann::json::array();
  std::printf("\n== the activation quantisers alone, the 28 layers' four linears per step: us, %% of %.0f GB/s ==\n",
              bw_gbps);
  for (Format f : {Format::kFp8, Format::kInt8, Format::kFp8Block}) {
    std::printf("%-20s", format_name(f));
    for (size_t i = 0; i < n_rows; ++i) {
      const int m = rows[i];
      double bytes = 0;  // fp16 in, one byte out per value, and the scales
      for (int k : {kHidden, kHidden, kHidden, kInter})
        bytes += kLayers * (3.0 * m * k + 4.0 * m * (f == Format::kFp8Block ? k / kGroup : 1));
      const double ms = time_graph(
          [&]() -> Status {
            for (int l = 0; l < kLayers; ++l)
              for (int k : {kHidden, kHidden, kHidden, kInter}) CROSSPOINT_RETURN_IF_ERROR(quantise(b, f, m, k, s));
            return Status::ok();
          },
          s, reps);
      const double pct = 100.0 * bytes / (bw_gbps * 1e9) * 1e3 / ms;
      std::printf(" | M=%-4d %7.1f us %3.0f%%", m, ms * 1e3, pct);
      out.push_back(
          {{"format", format_name(f)}, {"m", m}, {"time_us", ms * 1e3}, {"bytes", bytes}, {"pct_of_bandwidth", pct}});
    }
    std::printf("\n");
  }
  return out;
}

}  // namespace

nlohmann::json bench_formats(cuda::CublasLtContext& ctx, double bw_gbps, cudaStream_t s, int reps) {
  auto cublas_only = cuda::CublasLtContext::create();  // int8 without CUTLASS
  BENCH_CHECK(cublas_only.status());
  (*cublas_only)->set_int8_cutlass(false);
  Scratch b;
  const size_t xs = static_cast<size_t>(kMaxRows) * kMaxK, ys = static_cast<size_t>(kMaxRows) * kMaxN;
  BENCH_CUDA(cudaMalloc(&b.x, xs * 2));
  BENCH_CUDA(cudaMalloc(&b.xq, xs));
  BENCH_CUDA(cudaMalloc(&b.x_scale, static_cast<size_t>(kMaxRows) * (kMaxK / 128) * 4));
  BENCH_CUDA(cudaMalloc(&b.y, ys * 2));
  BENCH_CUDA(cudaMalloc(&b.sums, ys * 4));
  BENCH_CUDA(cudaMalloc(&b.w_fp16, static_cast<size_t>(kMaxN) * kHidden * 2));
  fill_f16(b.x, xs, -1.f, 1.f, 81, s);
  const int rows[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, kMaxRows};
  std::vector<double> fp16_ms(std::size(rows), 0.0);
  nlohmann::json out = nlohmann::json::array();
  std::printf(
      "\n== the 28 layers' linears of Qwen2.5-7B per step, per format as the engine calls it: ms, %% of the "
      "%.0f GB/s read ceiling, time / fp16's ==\n",
      bw_gbps);
  for (Format f : kFormats) {
    std::vector<FormatLinear> lins;
    double bytes = 0;
    for (int l = 0; l < kLayers; ++l)
      for (auto [n, k] : {std::pair{kQkv, kHidden}, {kHidden, kHidden}, {2 * kInter, kHidden}, {kHidden, kInter}}) {
        lins.push_back(make(f, n, k, 7000 + static_cast<uint32_t>(lins.size()), s));
        bytes += lins.back().bytes;
      }
    std::printf("%-20s", format_name(f));
    for (size_t i = 0; i < std::size(rows); ++i) {
      const int m = rows[i];
      bool available = true;
      if (f == Format::kFp8Block || f == Format::kFp8BlockCublas)
        for (const FormatLinear& l : lins)
          available = available && cuda::fp8_block_gemm_available(ctx, cuda::fp8_block_padded_rows(m), l.n, l.k);
      if (!available) {
        std::printf(" | M=%-4d %22s", m, "no cuBLASLt kernel");
        out.push_back({{"format", format_name(f)}, {"m", m}, {"available", false}});
        continue;
      }
      const double ms = time_graph(
          [&]() -> Status {
            cuda::CublasLtContext& c = f == Format::kInt8Cublas ? **cublas_only : ctx;
            for (const FormatLinear& l : lins) CROSSPOINT_RETURN_IF_ERROR(run(c, b, f, l, m, s));
            return Status::ok();
          },
          s, reps);
      if (f == Format::kFp16) fp16_ms[i] = ms;
      const double pct = 100.0 * bytes / (bw_gbps * 1e9) * 1e3 / ms;
      const double ratio = fp16_ms[i] > 0 ? ms / fp16_ms[i] : 0.0;
      std::printf(" | M=%-4d %6.2f ms %3.0f%% %4.2fx", m, ms, pct, ratio);
      out.push_back({{"format", format_name(f)},
                     {"m", m},
                     {"available", true},
                     {"time_ms", ms},
                     {"weight_bytes", bytes},
                     {"pct_of_bandwidth", pct},
                     {"time_over_fp16", ratio}});
    }
    std::printf("\n");
    for (FormatLinear& l : lins) release(l);
  }
  const nlohmann::json quantisers = bench_quantisers(b, rows, std::size(rows), bw_gbps, s, reps);
  cudaFree(b.x);
  cudaFree(b.xq);
  cudaFree(b.x_scale);
  cudaFree(b.y);
  cudaFree(b.sums);
  cudaFree(b.w_fp16);
  return {{"linears", out}, {"quantisers", quantisers}};
}

}  // namespace crosspoint::bench
