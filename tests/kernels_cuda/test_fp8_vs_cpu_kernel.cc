// The GPU's W8A8-FP8 linear (fp8_linear_from_fp16, every dispatch path) against the CPU engine's
// own kernel (kernels/fp8.h fp8_linear) on weights quantised as crosspoint quantize writes them
// (per-channel scale max|w| / 448) and fp16 activations with outlier columns, at the model's
// shapes (SmolLM2-135M's K = 576 and 1,536; the tiny checkpoints' 256 and 512). The inputs are
// fp16 values, so both devices quantise the same numbers to the same e4m3 codes and scales:
// what is left is f32 summation order and the GPU's fp16 output rounding, rel. 2^-11 of each
// output: max |gpu - cpu| <= 2^-10 max |cpu| + 2^-10 |cpu|.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/dtype.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/linear.h"
#include "kernels/fp8.h"
#include "kernels_cuda/reference.h"

namespace crosspoint::cuda {
namespace {

using testing::DeviceBuffer;

TEST(Fp8LinearVsCpuKernel, EveryDispatchPathGivesTheCpuKernelsOutput) {
  CROSSPOINT_SKIP_WITHOUT_GPU();
  auto ctx = CublasLtContext::create();
  ASSERT_TRUE(ctx.is_ok());
  std::mt19937 rng(20261203);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (auto [n, k] : {std::pair{960, 576}, {576, 576}, {3072, 576}, {576, 1536}, {512, 256}, {256, 512}}) {
    // Weights as a checkpoint has them: e4m3 codes of w / scale, one scale per output row.
    std::vector<uint8_t> wq(static_cast<size_t>(n) * k);
    std::vector<float> w_scale(n);
    std::vector<float> w(static_cast<size_t>(k));
    for (int j = 0; j < n; ++j) {
      float amax = 0.f;
      for (int kk = 0; kk < k; ++kk) amax = std::fmax(amax, std::fabs(w[kk] = normal(rng) * 0.05f));
      w_scale[j] = amax / 448.f;
      for (int kk = 0; kk < k; ++kk) wq[static_cast<size_t>(j) * k + kk] = f32_to_e4m3(w[kk] / w_scale[j]);
    }
    DeviceBuffer<uint8_t> wq_dev(wq);
    DeviceBuffer<float> ws_dev(w_scale);
    for (int m : {1, 2, 3, 8, 16, 17, 33, 64, 130}) {
      // fp16 activations with a few large columns, as an RMSNorm output has.
      std::vector<uint16_t> x(static_cast<size_t>(m) * k);
      std::vector<float> xf(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        const float v = normal(rng) * ((i % k) % 97 == 3 ? 40.f : 1.f);
        x[i] = f32_to_f16(v);
        xf[i] = f16_to_f32(x[i]);
      }
      std::vector<float> cpu(static_cast<size_t>(m) * n);
      Fp8LinearArgs args;
      args.x = xf.data();
      args.weight = wq.data();
      args.weight_scale = w_scale.data();
      args.y = cpu.data();
      args.num_rows = m;
      args.in_features = k;
      args.out_features = n;
      ASSERT_TRUE(crosspoint::fp8_linear(args).is_ok());

      DeviceBuffer<uint16_t> x_dev(x), y(static_cast<size_t>(m) * n);
      DeviceBuffer<uint8_t> xq(static_cast<size_t>(m) * k);
      DeviceBuffer<float> xs(m), scratch(static_cast<size_t>(m) * n);
      y.poison();
      const Status st = fp8_linear_from_fp16(**ctx, x_dev.get(), k, xq.get(), k, xs.get(), wq_dev.get(), k,
                                             ws_dev.get(), y.get(), n, m, n, k, scratch.get(), nullptr);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto gpu = y.download();
      float scale = 0.f;
      for (float v : cpu) scale = std::fmax(scale, std::fabs(v));
      int bad = 0;
      double worst = 0.0;
      for (size_t i = 0; i < cpu.size(); ++i) {
        const double d = std::fabs(static_cast<double>(f16_to_f32(gpu[i])) - cpu[i]);
        worst = std::fmax(worst, d / scale);
        if (!(d <= (scale + std::fabs(cpu[i])) / 1024.0)) ++bad;
      }
      EXPECT_EQ(bad, 0) << "m=" << m << " n=" << n << " k=" << k << ": worst |gpu - cpu| " << worst
                        << " of the output scale";
    }
  }
}

}  // namespace
}  // namespace crosspoint::cuda
