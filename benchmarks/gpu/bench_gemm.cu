// GEMM and decode-step weight-streaming benchmark for the Qwen2.5-7B linear shapes, per
// precision (fp16, W8A8-FP8, W4A16-int4), with random weights generated on the device in
// each precision's real layout. Every timing is a CUDA-graph replay (median of replays),
// printed beside its roofline bound: bytes / measured bandwidth and FLOPs / measured tensor
// rate, both passed in from the ceilings measured in the same device call.
//
//   bench_gemm --bw-gbps 4300 --fp16-tflops 730 --fp8-tflops 1300 --out results.json
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dtype.h"
#include "gpu/bench_cutlass_tiles.h"
#include "gpu/bench_formats.h"
#include "gpu/fill_random.h"
#include "gpu/graph_timing.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_quant.h"
#include "kernels/cuda/gemv.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/programmatic_launch.cuh"
#include "kernels/cuda/w4a16_dequantize.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_gemv.h"

namespace crosspoint::bench {
namespace {

using cuda::CublasLtContext;

struct Ceilings {
  double bw_gbps = 4300;     // measured HBM read bandwidth, GB/s
  double fp16_tflops = 730;  // measured dense fp16 tensor rate
  double fp8_tflops = 1300;  // measured dense fp8 tensor rate
};

enum class Precision { kFp16, kFp8, kInt4 };
const char* precision_name(Precision p) {
  return p == Precision::kFp16 ? "fp16" : p == Precision::kFp8 ? "w8a8-fp8" : "w4a16-int4";
}
constexpr int kGroupSize = 128;

// Bytes one pass over the weights reads (values + scales).
double weight_bytes(Precision p, int n, int k) {
  switch (p) {
    case Precision::kFp16: return 2.0 * n * k;
    case Precision::kFp8: return 1.0 * n * k + 4.0 * n;
    case Precision::kInt4: return 0.5 * n * k + 2.0 * n * ((k + kGroupSize - 1) / kGroupSize);
  }
  return 0;
}

// One linear's weights on the device in its precision's layout.
struct Linear {
  Precision precision;
  int n = 0, k = 0;
  void* weight = nullptr;  // fp16 [N,K] | e4m3 [N,K] | packed int4 [N/16][K/64][32][4]
  void* scales = nullptr;  // -        | fp32 [N]    | packed half2 [K/128][N/16][8]
};

Linear make_linear(Precision p, int n, int k, uint32_t seed, cudaStream_t s) {
  Linear lin{p, n, k};
  const size_t nk = static_cast<size_t>(n) * k;
  switch (p) {
    case Precision::kFp16:
      BENCH_CUDA(cudaMalloc(&lin.weight, nk * 2));
      fill_f16(static_cast<uint16_t*>(lin.weight), nk, -0.05f, 0.05f, seed, s);
      break;
    case Precision::kFp8:
      BENCH_CUDA(cudaMalloc(&lin.weight, nk));
      BENCH_CUDA(cudaMalloc(&lin.scales, n * 4));
      fill_e4m3(static_cast<uint8_t*>(lin.weight), nk, seed, s);
      fill_f32(static_cast<float*>(lin.scales), n, 1e-4f, 1e-3f, seed + 1, s);
      break;
    case Precision::kInt4: {
      BENCH_CUDA(cudaMalloc(&lin.weight, nk / 2));
      const size_t num_scales = static_cast<size_t>((k + kGroupSize - 1) / kGroupSize) * n;
      BENCH_CUDA(cudaMalloc(&lin.scales, num_scales * 2));
      fill_u32(static_cast<uint32_t*>(lin.weight), nk / 8, seed, s);
      fill_f16(static_cast<uint16_t*>(lin.scales), num_scales, 0.002f, 0.02f, seed + 1, s);
      break;
    }
  }
  return lin;
}

void free_linear(Linear& lin) {
  cudaFree(lin.weight);
  cudaFree(lin.scales);
  lin.weight = lin.scales = nullptr;
}

// Activation/output buffers big enough for every shape here at M <= 256.
struct Buffers {
  static constexpr int kMaxM = 256, kMaxK = 18944, kMaxN = 152064;
  uint16_t* x = nullptr;     // [kMaxM, kMaxK] fp16
  uint8_t* xq = nullptr;     // [kMaxM, kMaxK] e4m3
  float* x_scale = nullptr;  // [kMaxM] fp32
  uint16_t* y = nullptr;     // [kMaxM, kMaxN] fp16
  float* scratch = nullptr;  // [kMaxM, kMaxN] fp32 (fp8 epilogue path)
};

Buffers make_buffers(cudaStream_t s) {
  Buffers b;
  const size_t xs = static_cast<size_t>(Buffers::kMaxM) * Buffers::kMaxK,
               ys = static_cast<size_t>(Buffers::kMaxM) * Buffers::kMaxN;
  BENCH_CUDA(cudaMalloc(&b.x, xs * 2));
  BENCH_CUDA(cudaMalloc(&b.xq, xs));
  BENCH_CUDA(cudaMalloc(&b.x_scale, Buffers::kMaxM * 4));
  BENCH_CUDA(cudaMalloc(&b.y, ys * 2));
  BENCH_CUDA(cudaMalloc(&b.scratch, ys * 4));
  fill_f16(b.x, xs, -1.f, 1.f, 77, s);
  fill_e4m3(b.xq, xs, 78, s);
  fill_f32(b.x_scale, Buffers::kMaxM, 1e-3f, 1e-2f, 79, s);
  return b;
}

// Kernel variants. "auto" is what an engine would call: the quantisation (fp8) included.
// gemv: what fp16_gemv / fp8_gemv pick (fp8: tensor cores on sm_89+), K split across a
// block's warps as planned; gemv_cuda_cores: fp8 on CUDA cores, split; gemv_whole_row: the
// former form, CUDA cores, one warp per whole weight row (k_splits = 1); gemv_fused_quant:
// fp8 with the per-token quantisation inside the GEMV (fp8_gemv_from_fp16, no quant launch).
// W4A16: the three kernels of w4a16_gemm.h (w4a16_gemv, w4a16_large = kLargeTile, w4a16_wgmma
// = kWgmma, only on compute capability 9.0) and w4a16_gemm, what the engine calls.
// cutlass: cutlass_fp8_gemm (after the per-token quantisation) on the kernel cutlass_fp8_tile_for
// names, what fp8_linear takes on Hopper; 64x128 where the table takes cuBLASLt instead.
enum class Variant {
  kAuto,
  kCublasLt,
  kGemv,
  kFp8Quant,
  kGemvWholeRow,
  kFp8Fused,
  kGemvCudaCores,
  kW4A16Gemv,
  kW4A16Large,
  kW4A16Engine,
  kW4A16Wgmma,
  kCutlass
};
const char* variant_name(Variant v) {
  switch (v) {
    case Variant::kAuto: return "auto";
    case Variant::kCublasLt: return "cublaslt";
    case Variant::kGemv: return "gemv";
    case Variant::kFp8Quant: return "fp8_quant_per_token";
    case Variant::kGemvWholeRow: return "gemv_whole_row";
    case Variant::kFp8Fused: return "gemv_fused_quant";
    case Variant::kGemvCudaCores: return "gemv_cuda_cores";
    case Variant::kW4A16Gemv: return "w4a16_gemv";
    case Variant::kW4A16Large: return "w4a16_large";
    case Variant::kW4A16Engine: return "w4a16_gemm";
    case Variant::kW4A16Wgmma: return "w4a16_wgmma";
    case Variant::kCutlass: return "cutlass";
  }
  return "?";
}
// Which variants run at batch rows m (GEMVs and W4A16 tunings only where they apply).
bool variant_applies(Variant v, int m) {
  if (v == Variant::kGemv || v == Variant::kGemvWholeRow || v == Variant::kFp8Fused || v == Variant::kGemvCudaCores)
    return m <= 4;
  if (v == Variant::kW4A16Large) return m >= 8;
  if (v == Variant::kW4A16Wgmma) return m >= 8 && cuda::w4a16_wgmma_supported();
  if (v == Variant::kW4A16Gemv) return m <= cuda::kW4A16GemvKernelMaxRows;
  if (v == Variant::kCutlass) return cuda::cutlass_fp8_available();
  return true;
}

Status run_linear(CublasLtContext& ctx, const Buffers& b, const Linear& lin, Variant v, int m, bool with_quant,
                  cudaStream_t s) {
  const int n = lin.n, k = lin.k;
  switch (lin.precision) {
    case Precision::kFp16:
      if (v == Variant::kAuto)
        return cuda::fp16_linear(ctx, b.x, k, static_cast<const uint16_t*>(lin.weight), k, b.y, n, m, n, k, s);
      if (v == Variant::kGemv)
        return cuda::fp16_gemv(b.x, k, static_cast<const uint16_t*>(lin.weight), k, b.y, n, m, n, k, s);
      if (v == Variant::kGemvWholeRow)
        return cuda::fp16_gemv(b.x, k, static_cast<const uint16_t*>(lin.weight), k, b.y, n, m, n, k, s, 1);
      return cuda::fp16_gemm_cublaslt(ctx, b.x, k, static_cast<const uint16_t*>(lin.weight), k, b.y, n, m, n, k, s);
    case Precision::kFp8:
      if (v == Variant::kFp8Fused) {
        return cuda::fp8_gemv_from_fp16(b.x, k, static_cast<const uint8_t*>(lin.weight), k,
                                        static_cast<const float*>(lin.scales), b.y, n, m, n, k, s);
      }
      if (v == Variant::kAuto && with_quant) {  // the engine's call: fused at small M, else quant + fp8_linear
        return cuda::fp8_linear_from_fp16(ctx, b.x, k, b.xq, k, b.x_scale, static_cast<const uint8_t*>(lin.weight), k,
                                          static_cast<const float*>(lin.scales), b.y, n, m, n, k, b.scratch, s);
      }
      if (with_quant || v == Variant::kFp8Quant) {
        CROSSPOINT_RETURN_IF_ERROR(cuda::fp8_quantize_per_token(b.x, k, b.xq, k, b.x_scale, m, k, s));
        if (v == Variant::kFp8Quant) return Status::ok();
      }
      if (v == Variant::kCutlass) {
        const cuda::CutlassFp8Tile tile =
            cuda::cutlass_fp8_tile_for(m, n, cuda::cuda_device_info().num_sms).value_or(cuda::CutlassFp8Tile::k64x128);
        return cuda::cutlass_fp8_gemm(tile, b.xq, k, b.x_scale, static_cast<const uint8_t*>(lin.weight), k,
                                      static_cast<const float*>(lin.scales), b.y, n, m, n, k, s);
      }
      if (v == Variant::kAuto) {
        return cuda::fp8_linear(ctx, b.xq, k, b.x_scale, static_cast<const uint8_t*>(lin.weight), k,
                                static_cast<const float*>(lin.scales), b.y, n, m, n, k, b.scratch, s);
      }
      if (v == Variant::kGemv || v == Variant::kGemvWholeRow || v == Variant::kGemvCudaCores) {
        const cuda::GemvOptions options{v == Variant::kGemvWholeRow ? 1 : 0, v != Variant::kGemv};
        return cuda::fp8_gemv(b.xq, k, b.x_scale, static_cast<const uint8_t*>(lin.weight), k,
                              static_cast<const float*>(lin.scales), b.y, n, m, n, k, s, options);
      }
      return cuda::fp8_gemm_cublaslt(ctx, b.xq, k, b.x_scale, static_cast<const uint8_t*>(lin.weight), k,
                                     static_cast<const float*>(lin.scales), b.y, n, m, n, k, b.scratch, s);
    case Precision::kInt4:
      if (v == Variant::kW4A16Engine) {
        return cuda::w4a16_gemm(b.x, k, static_cast<const uint32_t*>(lin.weight),
                                static_cast<const uint32_t*>(lin.scales), b.y, n, m, n, k, kGroupSize, s);
      }
      return cuda::w4a16_gemm_with(v == Variant::kW4A16Gemv    ? cuda::W4A16Kernel::kGemv
                                   : v == Variant::kW4A16Wgmma ? cuda::W4A16Kernel::kWgmma
                                                               : cuda::W4A16Kernel::kLargeTile,
                                   b.x, k, static_cast<const uint32_t*>(lin.weight),
                                   static_cast<const uint32_t*>(lin.scales), b.y, n, m, n, k, kGroupSize, s);
  }
  return internal_error("unknown precision");
}

struct Shape {
  const char* name;
  int n, k;
};
const Shape kLayerShapes[] = {{"q/o 3584x3584", 3584, 3584},
                              {"k/v 512x3584", 512, 3584},
                              {"gate/up 18944x3584", 18944, 3584},
                              {"down 3584x18944", 3584, 18944}};
const int kBatchSizes[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
const std::vector<Variant> kW4A16Variants = {Variant::kW4A16Engine, Variant::kW4A16Gemv, Variant::kW4A16Large,
                                             Variant::kW4A16Wgmma};

nlohmann::json record(const Ceilings& c, Precision p, const char* kernel, const char* shape, int m, int n, int k,
                      double bytes, double flops, double ms) {
  const double us = ms * 1e3;
  const double bound_us = bytes / (c.bw_gbps * 1e9) * 1e6;
  const double tensor = p == Precision::kFp8 ? c.fp8_tflops : c.fp16_tflops;
  const double flop_bound_us = flops / (tensor * 1e12) * 1e6;
  std::printf("%-11s %-20s %-19s M=%-4d %9.1f MB %8.2f us  %7.0f GB/s %5.1f%% bw  %7.1f TF/s %5.1f%% tc\n",
              precision_name(p), kernel, shape, m, bytes / 1e6, us, bytes / us / 1e3, 100 * bound_us / us,
              flops / us / 1e6, 100 * flop_bound_us / us);
  return {{"precision", precision_name(p)},
          {"kernel", kernel},
          {"shape", shape},
          {"m", m},
          {"n", n},
          {"k", k},
          {"bytes", bytes},
          {"flops", flops},
          {"time_us", us},
          {"gbps", bytes / us / 1e3},
          {"bound_us", std::max(bound_us, flop_bound_us)},
          {"pct_of_bandwidth", 100 * bound_us / us},
          {"pct_of_tensor_rate", 100 * flop_bound_us / us}};
}

// One linear shape at each batch size and variant; weights rotated over enough copies
// (> 8x the 60 MB L2) that every launch streams from HBM.
nlohmann::json bench_layer_gemms(const Ceilings& c, CublasLtContext& ctx, const Buffers& b, cudaStream_t s, int reps) {
  nlohmann::json out = nlohmann::json::array();
  for (Precision p : {Precision::kFp16, Precision::kFp8, Precision::kInt4}) {
    for (const Shape& shape : kLayerShapes) {
      const double wbytes = weight_bytes(p, shape.n, shape.k);
      const int copies = std::clamp(static_cast<int>(512e6 / wbytes) + 1, 2, 64);
      std::vector<Linear> lins;
      for (int i = 0; i < copies; ++i) lins.push_back(make_linear(p, shape.n, shape.k, 1000 + i, s));
      std::vector<Variant> variants =
          p == Precision::kInt4 ? kW4A16Variants
                                : std::vector<Variant>{Variant::kCublasLt, Variant::kGemv, Variant::kGemvWholeRow};
      if (p == Precision::kFp8) {
        variants.insert(variants.end(),
                        {Variant::kGemvCudaCores, Variant::kFp8Fused, Variant::kFp8Quant, Variant::kCutlass});
      }
      for (int m : kBatchSizes) {
        for (Variant v : variants) {
          if (!variant_applies(v, m)) continue;
          const double ms = time_graph(
                                [&]() -> Status {
                                  for (const Linear& lin : lins)
                                    CROSSPOINT_RETURN_IF_ERROR(run_linear(ctx, b, lin, v, m, false, s));
                                  return Status::ok();
                                },
                                s, reps) /
                            copies;
          const double act_bytes =
              (p == Precision::kFp8 && v != Variant::kFp8Fused ? 1.0 : 2.0) * m * shape.k + 2.0 * m * shape.n;
          if (v == Variant::kFp8Quant) {  // reads x fp16 once (twice really: amax then convert), writes e4m3
            out.push_back(record(c, p, variant_name(v), shape.name, m, shape.n, shape.k, 3.0 * m * shape.k, 0, ms));
          } else {
            out.push_back(record(c, p, variant_name(v), shape.name, m, shape.n, shape.k, wbytes + act_bytes,
                                 2.0 * m * shape.n * shape.k, ms));
          }
        }
      }
      for (Linear& lin : lins) free_linear(lin);
    }
  }
  return out;
}

// One cell of the layers-only table: the 28 layers' linears of one step at M rows.
struct LayerTableEntry {
  int m = 0;
  std::string kernel;  // "<precision> <variant>"
  double ms = 0, gbps = 0, tflops = 0;
};

// One line per kernel (in order of first appearance), one cell per M: ms, GB/s of weights,
// TFLOP/s and the time as a multiple of the first kernel's (FP16 cuBLASLt) at that M.
void print_layer_table(const std::vector<LayerTableEntry>& entries) {
  std::vector<std::string> kernels;
  std::vector<int> ms;
  for (const auto& e : entries) {
    if (std::find(kernels.begin(), kernels.end(), e.kernel) == kernels.end()) kernels.push_back(e.kernel);
    if (std::find(ms.begin(), ms.end(), e.m) == ms.end()) ms.push_back(e.m);
  }
  std::printf(
      "\n== 28 layers' linears of Qwen2.5-7B per step (no lm_head): ms, GB/s of weights, TFLOP/s, time / first line's "
      "==\n");
  for (const auto& kernel : kernels) {
    std::printf("%-32s", kernel.c_str());
    for (int m : ms) {
      const LayerTableEntry* base = nullptr;
      const LayerTableEntry* cell = nullptr;
      for (const auto& e : entries) {
        if (e.m == m && e.kernel == kernels.front()) base = &e;
        if (e.m == m && e.kernel == kernel) cell = &e;
      }
      if (cell == nullptr) {
        std::printf(" | M=%-3d %30s", m, "-");
      } else {
        std::printf(" | M=%-3d %6.2f ms %5.0f GB/s %4.0f TF %4.2fx", m, cell->ms, cell->gbps, cell->tflops,
                    base != nullptr ? cell->ms / base->ms : 0.0);
      }
    }
    std::printf("\n");
  }
}

// Rows of the prefill line of the layers-only table (one 2,048-token prompt chunk), and the
// kernels timed there: FP16 cuBLASLt, W8A8-FP8 (quantisation included) and the W4A16 kernels
// meant for many rows.
constexpr int kPrefillRows = 2048;
bool runs_at_prefill(Precision p, Variant v) {
  if (p == Precision::kFp16) return v == Variant::kCublasLt;
  if (p == Precision::kFp8) return v == Variant::kAuto || v == Variant::kCublasLt;
  if (v == Variant::kW4A16Wgmma) return cuda::w4a16_wgmma_supported();
  return v == Variant::kW4A16Engine || v == Variant::kW4A16Large;
}

// Activations and outputs for kPrefillRows rows (Buffers holds 256): the same Buffers with x,
// xq, x_scale and y swapped for bigger ones.
struct PrefillBuffers {
  Buffers b;
  explicit PrefillBuffers(const Buffers& small, cudaStream_t s) : b(small) {
    constexpr int kMaxK = 18944, kMaxN = 2 * 18944;  // down's K, gate_up's N
    const size_t xs = static_cast<size_t>(kPrefillRows) * kMaxK, ys = static_cast<size_t>(kPrefillRows) * kMaxN;
    BENCH_CUDA(cudaMalloc(&b.x, xs * 2));  // [2048, 18944] fp16
    BENCH_CUDA(cudaMalloc(&b.y, ys * 2));  // [2048, 37888] fp16
    BENCH_CUDA(cudaMalloc(&b.xq, xs));     // [2048, 18944] e4m3
    BENCH_CUDA(cudaMalloc(&b.x_scale, kPrefillRows * 4));
    fill_f16(b.x, xs, -1.f, 1.f, 80, s);
  }
  ~PrefillBuffers() {
    cudaFree(b.x);
    cudaFree(b.y);
    cudaFree(b.xq);
    cudaFree(b.x_scale);
  }
};

// All linears of one decode step of Qwen2.5-7B (28 layers of fused qkv, o, fused gate_up,
// down; then lm_head in fp16 for every precision, as the W8A8 and GPTQ checkpoints keep it).
// The layers-only table also gets a prefill line (kPrefillRows rows) for the kernels of
// runs_at_prefill.
nlohmann::json bench_decode_step(const Ceilings& c, CublasLtContext& ctx, const Buffers& b, cudaStream_t s, int reps,
                                 int max_m = 1 << 30) {
  constexpr int kLayers = 28, kHidden = 3584, kInter = 18944, kQkv = 4608, kVocab = 152064;
  nlohmann::json out = nlohmann::json::array();
  std::vector<LayerTableEntry> layer_table;
  const PrefillBuffers prefill(b, s);
  for (Precision p : {Precision::kFp16, Precision::kFp8, Precision::kInt4}) {
    std::vector<Linear> lins;
    double bytes = 0, params = 0;
    for (int l = 0; l < kLayers; ++l) {
      for (auto [n, k] : {std::pair{kQkv, kHidden}, {kHidden, kHidden}, {2 * kInter, kHidden}, {kHidden, kInter}}) {
        lins.push_back(make_linear(p, n, k, 5000 + l * 4 + static_cast<int>(lins.size() % 4), s));
        bytes += weight_bytes(p, n, k);
        params += static_cast<double>(n) * k;
      }
    }
    const double layer_bytes = bytes, layer_params = params;  // the 28 layers without lm_head
    Linear head = make_linear(Precision::kFp16, kVocab, kHidden, 9999, s);
    bytes += weight_bytes(Precision::kFp16, kVocab, kHidden);
    params += static_cast<double>(kVocab) * kHidden;
    for (int m : kBatchSizes) {
      if (m > max_m) continue;
      std::vector<Variant> variants =
          p == Precision::kInt4
              ? kW4A16Variants
              : std::vector<Variant>{Variant::kAuto, Variant::kCublasLt, Variant::kGemv, Variant::kGemvWholeRow};
      if (p == Precision::kFp8)
        variants.insert(variants.end(), {Variant::kGemvCudaCores, Variant::kFp8Fused, Variant::kCutlass});
      for (Variant v : variants) {
        // GEMVs in the step at M <= 2 (fp8's tensor-core GEMV, as cheap at M = 4, also there).
        const bool gemv_form = v == Variant::kGemv || v == Variant::kGemvWholeRow || v == Variant::kGemvCudaCores;
        if (!variant_applies(v, m) || (gemv_form && m > 2 && !(p == Precision::kFp8 && v == Variant::kGemv))) continue;
        // lm_head (fp16 in every precision): what fp16_linear picks.
        const Variant head_variant = Variant::kAuto;
        const double ms = time_graph(
            [&]() -> Status {
              for (const Linear& lin : lins) CROSSPOINT_RETURN_IF_ERROR(run_linear(ctx, b, lin, v, m, true, s));
              return run_linear(ctx, b, head, head_variant, m, false, s);
            },
            s, reps);
        // fp8 "auto" is the engine's fp8_linear_from_fp16 (fused at small M); the others quantise first.
        const bool separate_quant = p == Precision::kFp8 && v != Variant::kAuto && v != Variant::kFp8Fused;
        const std::string kernel =
            std::string(variant_name(v)) + (separate_quant ? "+quant" : "") + ", lm_head " + variant_name(head_variant);
        auto r = record(c, p, kernel.c_str(), "decode step linears", m, 0, 0, bytes, 2.0 * m * params, ms);
        r["time_ms"] = ms;
        r["bound_ms"] = bytes / (c.bw_gbps * 1e9) * 1e3;
        out.push_back(r);
        // The 28 layers' linears alone (no lm_head) at M >= 8: every kernel meant for those rows
        // against FP16 cuBLASLt.
        if (m >= 8 && !gemv_form && v != Variant::kFp8Fused && !(p == Precision::kFp16 && v == Variant::kAuto)) {
          const double layers_ms = time_graph(
              [&]() -> Status {
                for (const Linear& lin : lins) CROSSPOINT_RETURN_IF_ERROR(run_linear(ctx, b, lin, v, m, true, s));
                return Status::ok();
              },
              s, reps);
          const std::string name = std::string(precision_name(p)) + " " + variant_name(v);
          auto lr = record(c, p, variant_name(v), "layer linears, no lm_head", m, 0, 0, layer_bytes,
                           2.0 * m * layer_params, layers_ms);
          lr["time_ms"] = layers_ms;
          out.push_back(lr);
          layer_table.push_back(
              {m, name, layers_ms, layer_bytes / (layers_ms * 1e6), 2.0 * m * layer_params / (layers_ms * 1e9)});
        }
      }
    }
    // The prefill line: the 28 layers' linears on one 2,048-row chunk.
    std::vector<Variant> prefill_variants =
        p == Precision::kInt4 ? kW4A16Variants : std::vector<Variant>{Variant::kAuto, Variant::kCublasLt};
    for (Variant v : prefill_variants) {
      if (!runs_at_prefill(p, v)) continue;
      const int m = kPrefillRows;
      const double layers_ms = time_graph(
          [&]() -> Status {
            for (const Linear& lin : lins) CROSSPOINT_RETURN_IF_ERROR(run_linear(ctx, prefill.b, lin, v, m, true, s));
            return Status::ok();
          },
          s, reps);
      auto lr = record(c, p, variant_name(v), "layer linears, no lm_head", m, 0, 0, layer_bytes, 2.0 * m * layer_params,
                       layers_ms);
      lr["time_ms"] = layers_ms;
      out.push_back(lr);
      layer_table.push_back({m, std::string(precision_name(p)) + " " + variant_name(v), layers_ms,
                             layer_bytes / (layers_ms * 1e6), 2.0 * m * layer_params / (layers_ms * 1e9)});
    }
    for (Linear& lin : lins) free_linear(lin);
    free_linear(head);
  }
  print_layer_table(layer_table);
  return out;
}

// W4A16 at many rows: the 28 layers' linears of Qwen2.5-7B (no lm_head) at M = 128 .. 2,048 on
// w4a16_gemm, on the layer dequantised into one fp16 scratch then cuBLASLt (what run_cuda_linear
// takes from kW4A16DequantMinRows rows), the dequantisation alone, and FP16 cuBLASLt beside them.
nlohmann::json bench_w4a16_many_rows(const Ceilings& c, CublasLtContext& ctx, const Buffers& b, cudaStream_t s,
                                     int reps) {
  constexpr int kLayers = 28, kHidden = 3584, kInter = 18944, kQkv = 4608;
  const PrefillBuffers prefill(b, s);
  uint16_t* w_fp16 = nullptr;  // the largest layer (gate_up) as fp16
  BENCH_CUDA(cudaMalloc(&w_fp16, static_cast<size_t>(2 * kInter) * kHidden * 2));
  struct Cell {
    std::string kernel;
    int m;
    double ms;
  };
  std::vector<Cell> cells;
  nlohmann::json out = nlohmann::json::array();
  for (Precision p : {Precision::kFp16, Precision::kInt4}) {
    std::vector<Linear> lins;
    double bytes = 0, params = 0;
    for (int l = 0; l < kLayers; ++l) {
      for (auto [n, k] : {std::pair{kQkv, kHidden}, {kHidden, kHidden}, {2 * kInter, kHidden}, {kHidden, kInter}}) {
        lins.push_back(make_linear(p, n, k, 8000 + l * 4 + static_cast<int>(lins.size() % 4), s));
        bytes += weight_bytes(p, n, k);
        params += static_cast<double>(n) * k;
      }
    }
    enum class Path { kFp16, kW4A16Gemm, kDequantCublasLt, kDequantOnly };
    const std::vector<Path> paths =
        p == Precision::kFp16 ? std::vector<Path>{Path::kFp16}
                              : std::vector<Path>{Path::kW4A16Gemm, Path::kDequantCublasLt, Path::kDequantOnly};
    for (Path path : paths) {
      const char* name = path == Path::kFp16              ? "fp16 cublaslt"
                         : path == Path::kW4A16Gemm       ? "w4a16 w4a16_gemm"
                         : path == Path::kDequantCublasLt ? "w4a16 dequant+cublaslt"
                                                          : "w4a16 dequant alone";
      for (int m : {128, 256, 512, 1024, 2048}) {
        const double ms = time_graph(
            [&]() -> Status {
              for (const Linear& lin : lins) {
                const auto* packed = static_cast<const uint32_t*>(lin.weight);
                const auto* scales = static_cast<const uint32_t*>(lin.scales);
                switch (path) {
                  case Path::kFp16:
                    CROSSPOINT_RETURN_IF_ERROR(cuda::fp16_linear(ctx, prefill.b.x, lin.k,
                                                                 static_cast<const uint16_t*>(lin.weight), lin.k,
                                                                 prefill.b.y, lin.n, m, lin.n, lin.k, s));
                    break;
                  case Path::kW4A16Gemm:
                    CROSSPOINT_RETURN_IF_ERROR(cuda::w4a16_gemm(prefill.b.x, lin.k, packed, scales, prefill.b.y, lin.n,
                                                                m, lin.n, lin.k, kGroupSize, s));
                    break;
                  case Path::kDequantCublasLt:
                  case Path::kDequantOnly:
                    CROSSPOINT_RETURN_IF_ERROR(
                        cuda::w4a16_dequantize(packed, scales, lin.n, lin.k, kGroupSize, w_fp16, lin.k, s));
                    if (path == Path::kDequantCublasLt) {
                      CROSSPOINT_RETURN_IF_ERROR(cuda::fp16_linear(ctx, prefill.b.x, lin.k, w_fp16, lin.k, prefill.b.y,
                                                                   lin.n, m, lin.n, lin.k, s));
                    }
                    break;
                }
              }
              return Status::ok();
            },
            s, reps);
        // The dequantisation alone moves 0.5 + 2 bytes a weight and does no matmul.
        const bool dequant_only = path == Path::kDequantOnly;
        auto r = record(c, p, name, "layer linears, no lm_head", m, 0, 0, dequant_only ? params * 2.5 : bytes,
                        dequant_only ? 0.0 : 2.0 * m * params, ms);
        r["time_ms"] = ms;
        out.push_back(r);
        cells.push_back({name, m, ms});
      }
    }
    for (Linear& lin : lins) free_linear(lin);
  }
  cudaFree(w_fp16);
  std::printf("\n== W4A16 at many rows: 28 layers' linears, ms (x FP16 cuBLASLt) ==\n");
  for (const char* kernel : {"fp16 cublaslt", "w4a16 w4a16_gemm", "w4a16 dequant+cublaslt", "w4a16 dequant alone"}) {
    std::printf("%-24s", kernel);
    for (const Cell& cell : cells) {
      if (cell.kernel != kernel) continue;
      double fp16 = 0;
      for (const Cell& base : cells)
        if (base.kernel == "fp16 cublaslt" && base.m == cell.m) fp16 = base.ms;
      std::printf(" | M=%-4d %7.2f ms %5.2fx", cell.m, cell.ms, fp16 > 0 ? cell.ms / fp16 : 0.0);
    }
    std::printf("\n");
  }
  return out;
}

// The decode-step GEMVs beside cuBLASLt at M = 1 .. 16: the 28 layers' linears of Qwen2.5-7B
// (fused qkv, o, fused gate_up, down; no lm_head) per precision and kernel, as the engine
// runs them (fp8: the per-token quantisation first, or fused into the GEMV for "auto" at
// M <= 2). One table line per kernel: ms, GB/s of weights and % of the bandwidth ceiling.
nlohmann::json bench_gemv16(const Ceilings& c, CublasLtContext& ctx, const Buffers& b, cudaStream_t s, int reps) {
  constexpr int kLayers = 28, kHidden = 3584, kInter = 18944, kQkv = 4608;
  const int batch_rows[] = {1, 2, 4, 6, 8, 12, 16};
  const int fp8_gemv_rows = cuda::fp8_gemv_max_rows();
  struct Line {
    Precision p;
    Variant v;
    int max_m;
  };
  const Line lines[] = {{Precision::kFp16, Variant::kCublasLt, 16},
                        {Precision::kFp16, Variant::kGemv, cuda::kGemvMaxRows},
                        {Precision::kFp16, Variant::kAuto, 16},
                        {Precision::kFp8, Variant::kCublasLt, 16},
                        {Precision::kFp8, Variant::kGemv, fp8_gemv_rows},
                        {Precision::kFp8, Variant::kFp8Fused, cuda::kGemvMaxRows},
                        {Precision::kFp8, Variant::kFp8Quant, 16},
                        {Precision::kFp8, Variant::kAuto, 16},
                        {Precision::kInt4, Variant::kW4A16Large, 16},
                        {Precision::kInt4, Variant::kW4A16Gemv, cuda::kW4A16GemvKernelMaxRows},
                        {Precision::kInt4, Variant::kW4A16Engine, 16}};
  struct Cell {
    std::string kernel;
    int m;
    double ms, gbps, pct;
  };
  std::vector<Cell> cells;
  nlohmann::json out = nlohmann::json::array();
  for (Precision p : {Precision::kFp16, Precision::kFp8, Precision::kInt4}) {
    std::vector<Linear> lins;
    double bytes = 0, params = 0;
    for (int l = 0; l < kLayers; ++l) {
      for (auto [n, k] : {std::pair{kQkv, kHidden}, {kHidden, kHidden}, {2 * kInter, kHidden}, {kHidden, kInter}}) {
        lins.push_back(make_linear(p, n, k, 7000 + l * 4 + static_cast<int>(lins.size() % 4), s));
        bytes += weight_bytes(p, n, k);
        params += static_cast<double>(n) * k;
      }
    }
    for (const Line& line : lines) {
      if (line.p != p) continue;
      // fp8 GEMVs on quantised x: the quantisation launch is part of their time.
      const bool quant_first = p == Precision::kFp8 && line.v != Variant::kAuto && line.v != Variant::kFp8Fused &&
                               line.v != Variant::kFp8Quant;
      const std::string kernel =
          std::string(precision_name(p)) + " " + variant_name(line.v) + (quant_first ? "+quant" : "");
      for (int m : batch_rows) {
        if (m > line.max_m) continue;
        const double ms = time_graph(
            [&]() -> Status {
              for (const Linear& lin : lins) CROSSPOINT_RETURN_IF_ERROR(run_linear(ctx, b, lin, line.v, m, true, s));
              return Status::ok();
            },
            s, reps);
        // The quantisation alone reads no weights and does no matmul: its line shows time only.
        const bool quant_only = line.v == Variant::kFp8Quant;
        const double weight_bytes = quant_only ? 0.0 : bytes;
        auto r = record(c, p, kernel.c_str(), "layer linears, no lm_head", m, 0, 0, weight_bytes,
                        quant_only ? 0.0 : 2.0 * m * params, ms);
        r["time_ms"] = ms;
        out.push_back(r);
        cells.push_back(
            {kernel, m, ms, weight_bytes / (ms * 1e6), 100.0 * weight_bytes / (c.bw_gbps * 1e9) / (ms * 1e-3)});
      }
    }
    for (Linear& lin : lins) free_linear(lin);
  }
  std::printf(
      "\n== 28 layers' linears of Qwen2.5-7B per decode step at M = 1..16: ms, GB/s of weights, %% of %.0f GB/s ==\n",
      c.bw_gbps);
  std::vector<std::string> kernels;
  for (const Cell& cell : cells) {
    if (std::find(kernels.begin(), kernels.end(), cell.kernel) == kernels.end()) kernels.push_back(cell.kernel);
  }
  for (const std::string& kernel : kernels) {
    std::printf("%-30s", kernel.c_str());
    for (int m : batch_rows) {
      const Cell* found = nullptr;
      for (const Cell& cell : cells) {
        if (cell.kernel == kernel && cell.m == m) found = &cell;
      }
      if (found == nullptr) std::printf(" | M=%-2d %23s", m, "-");
      else if (found->gbps == 0) std::printf(" | M=%-2d %6.3f ms %15s", m, found->ms, "");
      else std::printf(" | M=%-2d %6.3f ms %5.0f GB/s %3.0f%%", m, found->ms, found->gbps, found->pct);
    }
    std::printf("\n");
  }
  return out;
}

// Every small-batch GEMV variant per decode-step shape of Qwen2.5-7B (fused qkv, o, fused
// gate_up, down, and the lm_head) at M = 1, 2, 4, 8, 16, each a CUDA graph of back-to-back
// launches over enough weight copies to stream from HBM (programmatic launch overlapping them
// as in the step), the kernel alone (fp8: the quantisation apart, and timed as its own line).
nlohmann::json bench_gemv_shapes(const Ceilings& c, CublasLtContext& ctx, const Buffers& b, cudaStream_t s, int reps) {
  const Shape shapes[] = {{"qkv 4608x3584", 4608, 3584},
                          {"o 3584x3584", 3584, 3584},
                          {"gate_up 37888x3584", 37888, 3584},
                          {"down 3584x18944", 3584, 18944},
                          {"lm_head 152064x3584", 152064, 3584}};
  const std::vector<Variant> fp16_variants = {Variant::kCublasLt, Variant::kGemv, Variant::kAuto};
  const std::vector<Variant> fp8_variants = {Variant::kCublasLt, Variant::kGemv, Variant::kFp8Fused,
                                             Variant::kFp8Quant};
  const std::vector<Variant> int4_variants = {Variant::kW4A16Engine, Variant::kW4A16Gemv};
  nlohmann::json out = nlohmann::json::array();
  for (Precision p : {Precision::kFp16, Precision::kFp8, Precision::kInt4}) {
    for (const Shape& shape : shapes) {
      const double wbytes = weight_bytes(p, shape.n, shape.k);
      const int copies = std::clamp(static_cast<int>(512e6 / wbytes) + 1, 2, 64);
      std::vector<Linear> lins;
      for (int i = 0; i < copies; ++i) lins.push_back(make_linear(p, shape.n, shape.k, 3000 + i, s));
      const std::vector<Variant>& variants = p == Precision::kFp16  ? fp16_variants
                                             : p == Precision::kFp8 ? fp8_variants
                                                                    : int4_variants;
      for (int m : {1, 2, 4, 8, 16}) {
        for (Variant v : variants) {
          const bool gemv_rows_ok =
              v != Variant::kGemv || m <= (p == Precision::kFp8 ? cuda::fp8_gemv_max_rows() : cuda::kGemvMaxRows);
          const bool fused_rows_ok = v != Variant::kFp8Fused || m <= cuda::kGemvMaxRows;
          const bool applies =
              v == Variant::kGemv || v == Variant::kFp8Fused ? gemv_rows_ok && fused_rows_ok : variant_applies(v, m);
          if (!applies) continue;
          const double ms = time_graph(
                                [&]() -> Status {
                                  for (const Linear& lin : lins)
                                    CROSSPOINT_RETURN_IF_ERROR(run_linear(ctx, b, lin, v, m, false, s));
                                  return Status::ok();
                                },
                                s, reps) /
                            copies;
          const bool fused = v == Variant::kFp8Fused;
          if (v == Variant::kFp8Quant) {
            out.push_back(record(c, p, variant_name(v), shape.name, m, shape.n, shape.k, 3.0 * m * shape.k, 0, ms));
            continue;
          }
          const double act_bytes = (p == Precision::kFp8 && !fused ? 1.0 : 2.0) * m * shape.k + 2.0 * m * shape.n;
          out.push_back(record(c, p, variant_name(v), shape.name, m, shape.n, shape.k, wbytes + act_bytes,
                               2.0 * m * shape.n * shape.k, ms));
        }
      }
      for (Linear& lin : lins) free_linear(lin);
    }
  }
  return out;
}

// The small-batch GEMVs at every forced K split (0 = planned) at M = 1, 2, to check the
// plans: fp16 (CUDA cores), fp8 on tensor cores and on CUDA cores, each plain and fused.
nlohmann::json bench_gemv_splits(const Ceilings& c, const Buffers& b, cudaStream_t s, int reps) {
  nlohmann::json out = nlohmann::json::array();
  for (Precision p : {Precision::kFp16, Precision::kFp8}) {
    for (const Shape& shape : kLayerShapes) {
      const double wbytes = weight_bytes(p, shape.n, shape.k);
      const int copies = std::clamp(static_cast<int>(512e6 / wbytes) + 1, 2, 64);
      std::vector<Linear> lins;
      for (int i = 0; i < copies; ++i) lins.push_back(make_linear(p, shape.n, shape.k, 2000 + i, s));
      const int num_kernels = p == Precision::kFp16 ? 1 : 4;
      for (int m : {1, 2}) {
        for (int kernel = 0; kernel < num_kernels; ++kernel) {
          const bool fused = kernel % 2 == 1, cuda_cores = kernel >= 2;
          for (int splits : {0, 1, 2, 4, 8}) {
            const int n = shape.n, k = shape.k;
            const cuda::GemvOptions options{splits, cuda_cores};
            const double ms =
                time_graph(
                    [&]() -> Status {
                      for (const Linear& lin : lins) {
                        if (p == Precision::kFp16) {
                          CROSSPOINT_RETURN_IF_ERROR(cuda::fp16_gemv(b.x, k, static_cast<const uint16_t*>(lin.weight),
                                                                     k, b.y, n, m, n, k, s, splits));
                        } else if (fused) {
                          CROSSPOINT_RETURN_IF_ERROR(cuda::fp8_gemv_from_fp16(
                              b.x, k, static_cast<const uint8_t*>(lin.weight), k, static_cast<const float*>(lin.scales),
                              b.y, n, m, n, k, s, nullptr, 0, nullptr, options));
                        } else {
                          CROSSPOINT_RETURN_IF_ERROR(
                              cuda::fp8_gemv(b.xq, k, b.x_scale, static_cast<const uint8_t*>(lin.weight), k,
                                             static_cast<const float*>(lin.scales), b.y, n, m, n, k, s, options));
                        }
                      }
                      return Status::ok();
                    },
                    s, reps) /
                copies;
            const std::string name = std::string(p == Precision::kFp16 ? "fp16_gemv"
                                                 : fused               ? "fp8_fused"
                                                                       : "fp8_gemv") +
                                     (p == Precision::kFp8 ? (cuda_cores ? "_cc" : "_mma") : "") +
                                     " ks=" + std::to_string(splits);
            const double act_bytes = (p == Precision::kFp8 && !fused ? 1.0 : 2.0) * m * k + 2.0 * m * n;
            out.push_back(record(c, p, name.c_str(), shape.name, m, n, k, wbytes + act_bytes, 2.0 * m * n * k, ms));
          }
        }
      }
      for (Linear& lin : lins) free_linear(lin);
    }
  }
  return out;
}

// --profile-shapes [ROWS]: each fused decode-step linear of Qwen2.5-7B (qkv, o, gate_up, down) once
// per precision at each M of ROWS (comma-separated, at most 256; default 1,8) with the engine's
// dispatch, eagerly and without timing: a short, fixed launch sequence for a profiler
// (scripts/gpu_study.py --only profile runs ncu over it).
void run_profile_shapes(CublasLtContext& ctx, const Buffers& b, cudaStream_t s, const std::vector<int>& rows) {
  constexpr int kHidden = 3584, kInter = 18944, kQkv = 4608;
  for (Precision p : {Precision::kFp16, Precision::kFp8, Precision::kInt4}) {
    for (int m : rows) {
      for (auto [n, k] : {std::pair{kQkv, kHidden}, {kHidden, kHidden}, {2 * kInter, kHidden}, {kHidden, kInter}}) {
        Linear lin = make_linear(p, n, k, 9000 + n + k, s);
        const Variant v = p == Precision::kInt4 ? Variant::kW4A16Engine : Variant::kAuto;
        BENCH_CHECK(run_linear(ctx, b, lin, v, m, true, s));
        BENCH_CUDA(cudaStreamSynchronize(s));
        std::printf("profiled %s M=%d %dx%d\n", precision_name(p), m, n, k);
        free_linear(lin);
      }
    }
  }
}

}  // namespace
}  // namespace crosspoint::bench

int main(int argc, char** argv) {
  using namespace crosspoint::bench;
  Ceilings c;
  std::string out_path = "bench_gemm.json";
  int reps = 15;
  bool skip_layers = false;
  bool gemv_splits = false;     // also time the GEMVs at every forced K split
  bool gemv16_only = false;     // only the decode-step GEMV table at M = 1 .. 16
  bool gemv_only = false;       // the GEMV table, the per-shape GEMVs and the decode step at M <= 16
  bool profile_shapes = false;  // only run_profile_shapes (for ncu)
  bool cutlass_tiles = false;   // only bench_cutlass_tiles (and bench_formats with --formats-only)
  std::vector<std::string> tile_operands = {"fp8", "int8", "fp8-block"};
  bool w4a16_many_rows = false;  // only bench_w4a16_many_rows
  bool formats_only = false;     // only bench_formats
  std::vector<int> profile_rows = {1, 8};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--bw-gbps") c.bw_gbps = std::stod(next());
    else if (a == "--fp16-tflops") c.fp16_tflops = std::stod(next());
    else if (a == "--fp8-tflops") c.fp8_tflops = std::stod(next());
    else if (a == "--out") out_path = next();
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--decode-only") skip_layers = true;
    else if (a == "--gemv-splits") gemv_splits = true;
    else if (a == "--gemv16-only") gemv16_only = true;
    else if (a == "--gemv-only") gemv_only = true;
    else if (a == "--cutlass-tiles") {
      cutlass_tiles = true;
      if (i + 1 < argc && argv[i + 1][0] != '-') {  // optional list of fp8, int8, fp8-block
        tile_operands.clear();
        std::stringstream list(next());
        for (std::string item; std::getline(list, item, ',');) tile_operands.push_back(item);
      }
    } else if (a == "--w4a16-many-rows") w4a16_many_rows = true;
    else if (a == "--formats-only") formats_only = true;
    else if (a == "--profile-shapes") {
      profile_shapes = true;
      if (i + 1 < argc && argv[i + 1][0] != '-') {  // optional list of M
        profile_rows.clear();
        std::stringstream list(next());
        for (std::string item; std::getline(list, item, ',');)
          profile_rows.push_back(std::clamp(std::stoi(item), 1, 256));
      }
    } else if (a == "--no-pdl") crosspoint::cuda::set_programmatic_launch_enabled(false);
    else {
      std::fprintf(
          stderr,
          "usage: bench_gemm [--bw-gbps X] [--fp16-tflops X] [--fp8-tflops X] [--reps N] [--decode-only] "
          "[--gemv-splits] [--gemv16-only] [--gemv-only] [--cutlass-tiles [fp8,int8,fp8-block]] [--w4a16-many-rows] "
          "[--formats-only] "
          "[--profile-shapes [M,M,...]] [--no-pdl] "
          "[--out FILE]\n");
      return 2;
    }
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("GPU %s, %d SMs, L2 %d MB; ceilings: %.0f GB/s, fp16 %.0f TF/s, fp8 %.0f TF/s\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, c.bw_gbps, c.fp16_tflops, c.fp8_tflops);
  cudaStream_t s;
  BENCH_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto ctx = crosspoint::cuda::CublasLtContext::create();
  BENCH_CHECK(ctx.status().is_ok() ? crosspoint::Status::ok() : ctx.status());
  const Buffers b = make_buffers(s);
  auto path = crosspoint::cuda::fp8_scale_path(**ctx, 8, 3584, 3584, 3584, 3584, 3584);
  const char* fp8_path = path.is_ok() && *path == crosspoint::cuda::Fp8ScalePath::kOuterVector
                             ? "outer-vector (in cuBLASLt)"
                             : "unit-scale GEMM + epilogue";
  std::printf("fp8 cuBLASLt scale path: %s\n", fp8_path);
  if (profile_shapes) {
    run_profile_shapes(**ctx, b, s, profile_rows);
    return 0;
  }
  nlohmann::json result = {
      {"gpu", prop.name},
      {"sms", prop.multiProcessorCount},
      {"l2_bytes", prop.l2CacheSize},
      {"ceilings", {{"read_gbps", c.bw_gbps}, {"fp16_tflops", c.fp16_tflops}, {"fp8_tflops", c.fp8_tflops}}},
      {"fp8_scale_path", fp8_path},
      {"reps", reps}};
  if (cutlass_tiles || w4a16_many_rows || formats_only) {
    // The 8-bit formats' GEMMs on every CUTLASS kernel (each shown against the fp8 tensor rate).
    if (cutlass_tiles)
      result["cutlass_tiles"] = bench_cutlass_tiles(**ctx, tile_operands, c.bw_gbps, c.fp8_tflops, s, reps);
    if (w4a16_many_rows) result["w4a16_many_rows"] = bench_w4a16_many_rows(c, **ctx, b, s, reps);
    if (formats_only) result["formats"] = bench_formats(**ctx, c.bw_gbps, s, reps);
    std::ofstream(out_path) << result.dump(1) << "\n";
    std::printf("wrote %s\n", out_path.c_str());
    return 0;
  }
  std::printf("\n== decode-step GEMVs beside cuBLASLt at M = 1..16 ==\n");
  result["gemv16"] = bench_gemv16(c, **ctx, b, s, reps);
  if (!gemv16_only) {
    std::printf("\n== decode step: all linears of Qwen2.5-7B (28 layers + lm_head), CUDA graph ==\n");
    result["decode_step"] = bench_decode_step(c, **ctx, b, s, reps, gemv_only ? 16 : 1 << 30);
  }
  if (!skip_layers && !gemv16_only) {
    std::printf("\n== small-batch GEMVs per decode-step shape ==\n");
    result["gemv_shapes"] = bench_gemv_shapes(c, **ctx, b, s, reps);
  }
  if (!gemv16_only && !gemv_only) result["w4a16_many_rows"] = bench_w4a16_many_rows(c, **ctx, b, s, reps);
  if (!gemv16_only && !gemv_only) result["formats"] = bench_formats(**ctx, c.bw_gbps, s, reps);
  if (!skip_layers && !gemv16_only && !gemv_only) {
    std::printf("\n== layer GEMMs ==\n");
    result["layer_gemms"] = bench_layer_gemms(c, **ctx, b, s, reps);
  }
  if (gemv_splits && !gemv16_only) {
    std::printf("\n== GEMVs at every K split ==\n");
    result["gemv_splits"] = bench_gemv_splits(c, b, s, reps);
  }
  result["programmatic_launch"] = crosspoint::cuda::programmatic_launch_enabled();
  std::ofstream(out_path) << result.dump(1) << "\n";
  std::printf("wrote %s\n", out_path.c_str());
  return 0;
}
