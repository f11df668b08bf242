// bench_cutlass_tiles.h: the 8-bit formats' CUTLASS kernels beside cuBLASLt, per step shape.
#include "gpu/bench_cutlass_tiles.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "common/dtype.h"
#include "gpu/fill_random.h"
#include "gpu/graph_timing.h"
#include "kernels/cuda/cutlass_fp8_block_gemm.h"
#include "kernels/cuda/cutlass_fp8_gemm.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_block_quant.h"

namespace crosspoint::bench {
namespace {

constexpr int kLayers = 28, kHidden = 3584, kInter = 18944, kQkv = 4608;
constexpr int kMaxRows = 2048, kMaxK = kInter, kMaxN = 2 * kInter;
constexpr int kRows[] = {16, 32, 64, 128, 256, 512, 1024, kMaxRows};

struct Shape {
  const char* name;
  int n, k;
};
constexpr Shape kShapes[] = {{"qkv 4608x3584", kQkv, kHidden},
                             {"o 3584x3584", kHidden, kHidden},
                             {"gate_up 37888x3584", 2 * kInter, kHidden},
                             {"down 3584x18944", kHidden, kInter}};

enum class Operands { kFp8, kInt8, kFp8Block };

// One linear's weights: e4m3 or int8 codes, and their scales per channel (fp8, int8) or per
// 128 x 128 block in cuBLASLt's layout plus the CUTLASS layout (block FP8).
struct Weights {
  uint8_t* w = nullptr;
  float* scales = nullptr;
  float* scales_m64 = nullptr;
};

Weights make_weights(Operands op, const Shape& shape, uint32_t seed, cudaStream_t s) {
  Weights l;
  const size_t nk = static_cast<size_t>(shape.n) * shape.k;
  BENCH_CUDA(cudaMalloc(&l.w, nk));
  if (op == Operands::kInt8) {
    fill_u32(reinterpret_cast<uint32_t*>(l.w), nk / 4, seed, s);  // any byte is an int8
  } else {
    fill_e4m3(l.w, nk, seed, s);
  }
  if (op == Operands::kFp8Block) {
    const size_t blocks = static_cast<size_t>((shape.n + 127) / 128) * cuda::fp8_block_weight_scale_row(shape.k);
    const size_t m64 = static_cast<size_t>((shape.n + 63) / 64) * (shape.k / 128);
    BENCH_CUDA(cudaMalloc(&l.scales, blocks * 4));
    BENCH_CUDA(cudaMalloc(&l.scales_m64, m64 * 4));
    fill_f32(l.scales, blocks, 1e-4f, 1e-3f, seed + 1, s);
    // The CUTLASS layout of the same scales, as the model derives it at load.
    std::vector<float> host(blocks);
    BENCH_CUDA(cudaMemcpyAsync(host.data(), l.scales, blocks * 4, cudaMemcpyDeviceToHost, s));
    BENCH_CUDA(cudaStreamSynchronize(s));
    const std::vector<float> m64_host =
        cuda::fp8_block_scales_m64(host.data(), cuda::fp8_block_weight_scale_row(shape.k), shape.n, shape.k);
    BENCH_CUDA(cudaMemcpy(l.scales_m64, m64_host.data(), m64 * 4, cudaMemcpyHostToDevice));
  } else {
    BENCH_CUDA(cudaMalloc(&l.scales, static_cast<size_t>(shape.n) * 4));
    fill_f32(l.scales, shape.n, 1e-4f, 1e-3f, seed + 1, s);
  }
  return l;
}

void release(Weights& l) {
  cudaFree(l.w);
  cudaFree(l.scales);
  cudaFree(l.scales_m64);
}

struct Activations {
  uint8_t* xq = nullptr;       // [kMaxRows, kMaxK] e4m3 or int8 codes
  float* x_scale = nullptr;    // [kMaxK / 128, kMaxRows]: per token (first row) or per token group
  uint16_t* y = nullptr;       // [kMaxRows, kMaxN] fp16
  int32_t* scratch = nullptr;  // [kMaxRows, kMaxN] cuBLASLt's int32 / fp32 epilogue buffer
};

struct Kernel {
  std::string name;
  int tokens = 0;  // the tile's tokens (0: cuBLASLt)
  std::function<Status(const Weights&, const Shape&, int m)> run;
};

// cuBLASLt first (the reference), then each CUTLASS kernel of the format.
std::vector<Kernel> kernels_for(Operands op, cuda::CublasLtContext& ctx, const Activations& a, cudaStream_t s) {
  std::vector<Kernel> out;
  const auto* xq8 = reinterpret_cast<const int8_t*>(a.xq);
  switch (op) {
    case Operands::kFp8:
      out.push_back({"cublaslt", 0, [&ctx, a, s](const Weights& l, const Shape& sh, int m) {
                       return cuda::fp8_gemm_cublaslt(ctx, a.xq, sh.k, a.x_scale, l.w, sh.k, l.scales, a.y, sh.n, m,
                                                      sh.n, sh.k, reinterpret_cast<float*>(a.scratch), s);
                     }});
      for (cuda::CutlassFp8Tile tile : cuda::kAllCutlassFp8Tiles)
        out.push_back({std::string("cutlass ") + cuda::cutlass_fp8_tile_name(tile), cuda::cutlass_fp8_tile_tokens(tile),
                       [tile, a, s](const Weights& l, const Shape& sh, int m) {
                         return cuda::cutlass_fp8_gemm(tile, a.xq, sh.k, a.x_scale, l.w, sh.k, l.scales, a.y, sh.n, m,
                                                       sh.n, sh.k, s);
                       }});
      break;
    case Operands::kInt8:
      out.push_back({"cublaslt", 0, [&ctx, a, xq8, s](const Weights& l, const Shape& sh, int m) {
                       return cuda::int8_gemm_cublaslt(ctx, xq8, sh.k, a.x_scale, reinterpret_cast<const int8_t*>(l.w),
                                                       sh.k, l.scales, a.y, sh.n, m, sh.n, sh.k, a.scratch, s);
                     }});
      for (cuda::CutlassFp8Tile tile : cuda::kAllCutlassInt8Tiles)
        out.push_back({std::string("cutlass ") + cuda::cutlass_fp8_tile_name(tile), cuda::cutlass_fp8_tile_tokens(tile),
                       [tile, a, xq8, s](const Weights& l, const Shape& sh, int m) {
                         return cuda::cutlass_int8_gemm(tile, xq8, sh.k, a.x_scale,
                                                        reinterpret_cast<const int8_t*>(l.w), sh.k, l.scales, a.y, sh.n,
                                                        m, sh.n, sh.k, s);
                       }});
      break;
    case Operands::kFp8Block:
      out.push_back({"cublaslt", 0, [&ctx, a, s](const Weights& l, const Shape& sh, int m) {
                       return cuda::fp8_block_gemm_cublaslt(ctx, a.xq, a.x_scale, l.w, l.scales, a.y, m, sh.n, sh.k, s);
                     }});
      for (cuda::CutlassFp8BlockTile tile : cuda::kAllCutlassFp8BlockTiles)
        out.push_back({std::string("cutlass ") + cuda::cutlass_fp8_block_tile_name(tile),
                       cuda::cutlass_fp8_block_tile_tokens(tile),
                       [tile, a, s](const Weights& l, const Shape& sh, int m) {
                         cuda::CutlassFp8BlockArgs g;
                         g.xq = a.xq;
                         g.x_scale = a.x_scale;
                         g.wq = l.w;
                         g.w_scale_m64 = l.scales_m64;
                         g.y = a.y;
                         g.m = m;
                         g.n = sh.n;
                         g.k = sh.k;
                         return cuda::cutlass_fp8_block_gemm_on(tile, g, s);
                       }});
      break;
  }
  return out;
}

// The kernel the engine's dispatch runs at m rows of an n-channel linear.
std::string dispatched(Operands op, int m, int n, int num_sms) {
  if (op == Operands::kFp8Block) {
    const auto tile = cuda::cutlass_fp8_block_tile_for(m, n, num_sms);
    return tile ? std::string("cutlass ") + cuda::cutlass_fp8_block_tile_name(*tile) : "cublaslt";
  }
  const auto tile =
      op == Operands::kInt8 ? cuda::cutlass_int8_tile_for(m, n, num_sms) : cuda::cutlass_fp8_tile_for(m, n, num_sms);
  return tile ? std::string("cutlass ") + cuda::cutlass_fp8_tile_name(*tile) : "cublaslt";
}

const char* operands_name(Operands op) {
  return op == Operands::kFp8 ? "w8a8-fp8" : op == Operands::kInt8 ? "w8a8-int8" : "w8a8-fp8-block128";
}

nlohmann::json bench_operands(Operands op, cuda::CublasLtContext& ctx, const Activations& a, double bw_gbps,
                              double tensor_tops, cudaStream_t s, int reps) {
  const int num_sms = cuda::cuda_device_info().num_sms;
  const std::vector<Kernel> kernels = kernels_for(op, ctx, a, s);
  std::printf(
      "\n== %s GEMMs (inputs quantised) on cuBLASLt and every CUTLASS kernel: us, %% of %.0f GB/s, %% of "
      "%.0f T/s ==\n",
      operands_name(op), bw_gbps, tensor_tops);
  nlohmann::json per_shape = nlohmann::json::array();
  std::map<int, double> best_total, dispatch_total;
  std::map<std::pair<int, std::string>, std::string> best_kernel;
  std::vector<uint16_t> want, got;
  for (const Shape& shape : kShapes) {
    const double wbytes = 1.0 * shape.n * shape.k;
    const int copies = std::clamp(static_cast<int>(512e6 / wbytes) + 1, 2, 64);  // past the L2
    std::vector<Weights> lins;
    for (int i = 0; i < copies; ++i) lins.push_back(make_weights(op, shape, 3000 + i, s));
    for (int m : kRows) {
      const size_t ys = static_cast<size_t>(m) * shape.n;
      const std::string want_kernel = dispatched(op, m, shape.n, num_sms);
      double best_ms = 1e30, dispatch_ms = 0;
      std::string best_name;
      bool have_reference = false;  // cuBLASLt's output, else the first kernel's that ran
      for (const Kernel& kernel : kernels) {
        // Tiles no wider than M (16 at least) and, below 128 tokens, a few times narrower at most.
        const bool narrow = kernel.tokens < 128 && kernel.tokens * 8 < m;
        if (kernel.tokens != 0 && (kernel.tokens > std::max(16, m) || narrow)) continue;
        const Status first = kernel.run(lins[0], shape, m);
        if (!first.is_ok()) {
          std::printf("%-28s %-19s M=%-4d skipped: %s\n", kernel.name.c_str(), shape.name, m,
                      first.to_string().c_str());
          continue;
        }
        const bool is_reference = !have_reference;
        have_reference = true;
        std::vector<uint16_t>& out = is_reference ? want : got;
        out.resize(ys);
        BENCH_CUDA(cudaMemcpyAsync(out.data(), a.y, ys * 2, cudaMemcpyDeviceToHost, s));
        BENCH_CUDA(cudaStreamSynchronize(s));
        // int8: every output the reference's bits (exact sums, one epilogue order). FP8: the
        // tensor cores' sums differ with the kernel's k-blocks, so the relative L2 error of the
        // whole output, within the tests' 2e-3 (and no NaN).
        size_t mismatches = 0;
        double max_diff = 0, diff2 = 0, ref2 = 0;
        if (!is_reference) {
          for (size_t i = 0; i < ys; ++i) {
            const double g = f16_to_f32(got[i]), w = f16_to_f32(want[i]), d = std::fabs(g - w);
            mismatches += got[i] != want[i] ? 1 : 0;
            diff2 += d * d;
            ref2 += w * w;
            if (!(d <= max_diff)) max_diff = d;
          }
        }
        const double rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? 1.0 : 0.0);
        const bool agrees = op == Operands::kInt8 ? mismatches == 0 : rel_l2 < 2e-3;
        const double ms = time_graph(
                              [&]() -> Status {
                                for (const Weights& l : lins) CROSSPOINT_RETURN_IF_ERROR(kernel.run(l, shape, m));
                                return Status::ok();
                              },
                              s, reps) /
                          copies;
        const double us = ms * 1e3;
        const double bytes = wbytes + 1.0 * m * shape.k + 2.0 * m * shape.n, ops = 2.0 * m * shape.n * shape.k;
        const double pct_bw = 100.0 * bytes / (bw_gbps * 1e3) / us, pct_tensor = 100.0 * ops / (tensor_tops * 1e6) / us;
        std::printf("%-28s %-19s M=%-4d %8.1f us %5.1f%% %5.1f%%%s\n", kernel.name.c_str(), shape.name, m, us, pct_bw,
                    pct_tensor, kernel.name == want_kernel ? "  (dispatch)" : "");
        per_shape.push_back({{"operands", operands_name(op)},
                             {"kernel", kernel.name},
                             {"shape", shape.name},
                             {"m", m},
                             {"n", shape.n},
                             {"k", shape.k},
                             {"time_us", us},
                             {"pct_of_bandwidth", pct_bw},
                             {"pct_of_tensor_rate", pct_tensor},
                             {"dispatch", kernel.name == want_kernel},
                             {"reference", is_reference},
                             {"outputs_differing_from_reference", mismatches},
                             {"max_abs_diff_vs_reference", max_diff},
                             {"rel_l2_vs_reference", rel_l2}});
        if (!agrees) {
          std::printf(
              "  ^ %zu of %zu outputs differ from the reference's (max |diff| %g, rel. L2 %.2e): not a candidate\n",
              mismatches, ys, max_diff, rel_l2);
          continue;
        }
        if (kernel.name == want_kernel) dispatch_ms = ms;
        if (ms < best_ms) best_ms = ms, best_name = kernel.name;
      }
      best_total[m] += kLayers * best_ms;
      dispatch_total[m] += kLayers * dispatch_ms;
      best_kernel[{m, shape.name}] = best_name;
    }
    for (Weights& l : lins) release(l);
  }
  std::printf("\n== %s: each shape's fastest kernel, 28 layers' GEMMs (no quantisation) ==\n", operands_name(op));
  nlohmann::json summary = nlohmann::json::array();
  for (int m : kRows) {
    std::printf("M=%-5d dispatch %7.3f ms  best mix %7.3f ms (%.2fx):", m, dispatch_total[m], best_total[m],
                best_total[m] / std::max(dispatch_total[m], 1e-9));
    nlohmann::json mix;
    for (const Shape& shape : kShapes) {
      std::printf("  %s: %s", shape.name, best_kernel[{m, shape.name}].c_str());
      mix[shape.name] = best_kernel[{m, shape.name}];
    }
    std::printf("\n");
    summary.push_back({{"m", m}, {"dispatch_ms", dispatch_total[m]}, {"best_mix_ms", best_total[m]}, {"best", mix}});
  }
  return {{"per_shape", per_shape}, {"summary", summary}};
}

}  // namespace

nlohmann::json bench_cutlass_tiles(cuda::CublasLtContext& ctx, const std::vector<std::string>& operands, double bw_gbps,
                                   double tensor_tops, cudaStream_t s, int reps) {
  Activations a;
  const size_t xs = static_cast<size_t>(kMaxRows) * kMaxK, ys = static_cast<size_t>(kMaxRows) * kMaxN;
  BENCH_CUDA(cudaMalloc(&a.xq, xs));
  BENCH_CUDA(cudaMalloc(&a.x_scale, static_cast<size_t>(kMaxK / 128) * kMaxRows * 4));
  BENCH_CUDA(cudaMalloc(&a.y, ys * 2));
  BENCH_CUDA(cudaMalloc(&a.scratch, ys * 4));
  fill_e4m3(a.xq, xs, 78, s);  // finite e4m3 codes; as int8, any code
  fill_f32(a.x_scale, static_cast<size_t>(kMaxK / 128) * kMaxRows, 1e-3f, 1e-2f, 79, s);
  nlohmann::json out;
  for (const std::string& name : operands) {
    const Operands op = name == "int8" ? Operands::kInt8 : name == "fp8-block" ? Operands::kFp8Block : Operands::kFp8;
    out[operands_name(op)] = bench_operands(op, ctx, a, bw_gbps, tensor_tops, s, reps);
  }
  cudaFree(a.xq);
  cudaFree(a.x_scale);
  cudaFree(a.y);
  cudaFree(a.scratch);
  return out;
}

}  // namespace crosspoint::bench
