// `quantize --device cuda` against the CPU quantisers: the GPU's per-channel FP8 and INT8 codes
// and scales byte for byte equal to quant/fp8_quantizer.h's and quant/int8_quantizer.h's on f32,
// f16 and bf16 weights (a zero row, a NaN, an outlier), and a whole quantised checkpoint
// identical to the CPU's. The GPU tests skip without a GPU; the refusal runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#include "common/dtype.h"
#include "model/model_test_util.h"
#include "model_cuda/cuda_test_util.h"
#include "quant/cuda/gpu_weight_quantizer.h"
#include "quant/fp8_quantizer.h"
#include "quant/int8_quantizer.h"
#include "quant/quantize_model.h"

namespace crosspoint {
namespace {

// A [N, K] weight in dtype with its f32 values (what the CPU quantisers read).
struct Weight {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  TensorInfo info;
};

Weight random_weight(DType dtype, int64_t N, int64_t K, std::mt19937& rng) {
  Weight w;
  w.info.name = std::string("w");  // (assigning the literal trips a GCC 12 -Wrestrict false positive)
  w.info.file = std::string("memory");
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const size_t elem = dtype == DType::kF32 ? 4 : 2;
  w.bytes.resize(static_cast<size_t>(N * K) * elem);
  w.values.resize(static_cast<size_t>(N * K));
  for (int64_t i = 0; i < N * K; ++i) {
    float v = dist(rng);
    if (i < K) v = 0.0f;          // row 0: all zero, the epsilon floor
    if (i == K + 3) v = 40.0f;    // an outlier in row 1
    if (i == 2 * K + 5) v = NAN;  // a NaN in row 2: skipped by amax, coded NaN / 0
    if (dtype == DType::kF16) {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(w.bytes.data() + i * 2, &h, 2);
      w.values[i] = f16_to_f32(h);
    } else if (dtype == DType::kBF16) {
      const uint16_t b = f32_to_bf16(v);
      std::memcpy(w.bytes.data() + i * 2, &b, 2);
      w.values[i] = bf16_to_f32(b);
    } else {
      std::memcpy(w.bytes.data() + i * 4, &v, 4);
      w.values[i] = v;
    }
  }
  w.info.dtype = dtype;
  w.info.shape = {N, K};
  w.info.data = w.bytes.data();
  w.info.num_bytes = w.bytes.size();
  return w;
}

TEST(GpuQuantizeTest, CodesAndScalesEqualTheCpuQuantisers) {
  SKIP_WITHOUT_GPU();
  auto gpu = GpuWeightQuantizer::create();
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  std::mt19937 rng(41);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (auto [N, K] : {std::pair<int64_t, int64_t>{5, 37}, {64, 3584}, {300, 640}}) {
      const Weight w = random_weight(dtype, N, K, rng);
      const Fp8Quantized fp8 = quantize_fp8_per_channel(w.values.data(), N, K);
      auto got = (*gpu)->quantize(w.info, cuda::WeightQuantScheme::kFp8E4M3);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_EQ(got->weight, fp8.weight) << dtype_name(dtype) << " " << N << " x " << K;
      EXPECT_EQ(got->scale, fp8.scale) << dtype_name(dtype) << " " << N << " x " << K;
      const Int8Quantized int8 = quantize_int8_per_channel(w.values.data(), N, K);
      got = (*gpu)->quantize(w.info, cuda::WeightQuantScheme::kInt8);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      EXPECT_EQ(0, std::memcmp(got->weight.data(), int8.weight.data(), int8.weight.size()))
          << dtype_name(dtype) << " " << N << " x " << K;
      EXPECT_EQ(got->scale, int8.scale) << dtype_name(dtype) << " " << N << " x " << K;
    }
  }
}

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(GpuQuantizeTest, AQuantisedCheckpointIsTheCpusByteForByte) {
  SKIP_WITHOUT_GPU();
  const auto root = std::filesystem::temp_directory_path() / "crosspoint_gpu_quantize" / std::to_string(::getpid());
  for (QuantizeScheme scheme : {QuantizeScheme::kW8A8Fp8, QuantizeScheme::kW8A8Int8}) {
    std::string files[2];
    for (int i = 0; i < 2; ++i) {
      QuantizeModelOptions o;
      o.model_dir = testing::model_fixture_dir("qwen2_untied_bf16");
      o.out_dir = (root / (i == 0 ? "cpu" : "cuda")).string();
      o.scheme = scheme;
      o.overwrite = true;
      o.device = i == 0 ? "cpu" : "cuda";
      const Status s = quantize_model(o);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      files[i] = file_bytes(std::filesystem::path(o.out_dir) / "model.safetensors") +
                 file_bytes(std::filesystem::path(o.out_dir) / "config.json");
    }
    EXPECT_FALSE(files[0].empty());
    EXPECT_TRUE(files[0] == files[1]) << "the GPU's checkpoint differs from the CPU's";
  }
  std::filesystem::remove_all(root);
}

TEST(GpuQuantizeTest, WithoutAGpuCudaIsRefusedAndNothingIsWritten) {
  if (cuda::cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  const auto out =
      std::filesystem::temp_directory_path() / ("crosspoint_gpu_quantize_none_" + std::to_string(::getpid()));
  QuantizeModelOptions o;
  o.model_dir = testing::model_fixture_dir("qwen2_untied_bf16");
  o.out_dir = out.string();
  o.device = "cuda";
  const Status s = quantize_model(o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("no CUDA GPU is visible"), std::string::npos) << s.to_string();
  EXPECT_FALSE(std::filesystem::exists(out));
  o.device = "cuda";
  o.scheme = QuantizeScheme::kW4A16;
  EXPECT_EQ(quantize_model(o).code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace crosspoint
