// Interoperability with the reference implementations, through fixtures they made
// (tests/fixtures/quant/make_interop_fixtures.py):
//  * compressed-tensors' FP8_DYNAMIC compressor: our quantiser writes the same bytes and
//    scales, our config parser reads its quantization_config, and the weights our loader
//    uses equal its decompress();
//  * an independent numpy implementation of the GPTQ v1 layout: our packer writes the same
//    words, and our loader dequantises its act-order checkpoint to the same weights.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/model_config.h"
#include "kernels/fp8.h"
#include "quant/fp8_linear_weight.h"
#include "quant/fp8_quantizer.h"
#include "quant/gptq_linear_weight.h"
#include "quant/int4_quantizer.h"
#include "quant/quant_config.h"
#include "quant/quant_test_util.h"

namespace crosspoint {
namespace {

using quant_testing::fixture_path;

template <typename T>
std::vector<T> values_of(const TensorInfo* t) {
  std::vector<T> v(t->num_bytes / sizeof(T));
  std::memcpy(v.data(), t->data, t->num_bytes);
  return v;
}

TEST(CompressedTensorsInteropTest, QuantiserLoaderAndConfigAgreeWithTheLibrary) {
  auto file = SafetensorsFile::open(fixture_path("fp8_interop.safetensors"));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  const TensorInfo* dense = file->find("dense.weight");
  const TensorInfo* weight = file->find("layer.weight");
  const TensorInfo* scale = file->find("layer.weight_scale");
  const TensorInfo* expected = file->find("expected.weight");
  ASSERT_TRUE(dense && weight && scale && expected);
  ASSERT_EQ(weight->dtype, DType::kF8E4M3);
  const int64_t N = dense->shape[0], K = dense->shape[1];

  const Fp8Quantized ours = quantize_fp8_per_channel(values_of<float>(dense).data(), N, K);
  EXPECT_EQ(ours.weight, values_of<uint8_t>(weight));
  EXPECT_EQ(ours.scale, values_of<float>(scale));

  std::ifstream config_file(fixture_path("fp8_interop_config.json"));
  std::stringstream config_text;
  config_text << config_file.rdbuf();
  auto parsed = parse_quant_config(config_text.str());
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->scheme, QuantScheme::kFp8Dynamic);

  // Our loader on the library's checkpoint: the weight it runs (e4m3 value times the
  // per-channel scale) equals the library's decompression.
  const std::string dir = ::testing::TempDir() + "/crosspoint_fp8_interop";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture_path("fp8_interop.safetensors"), dir + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  auto tensors = SafetensorsModel::open_dir(dir);
  ASSERT_TRUE(tensors.is_ok()) << tensors.status().to_string();
  ModelConfig config;
  config.quantization_config_json = config_text.str();
  LinearWeightRequest r;
  r.tensors = tensors.value().get();
  r.config = &config;
  r.prefix = "layer";
  r.in_features = K;
  r.out_features = N;
  auto layer = fp8_linear_weight_format()->load(r);
  ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
  const LinearWeightView view = layer.value()->view();
  const auto* fp8 = std::get_if<Fp8WeightStorage>(&view.storage);
  ASSERT_NE(fp8, nullptr);
  const std::vector<uint8_t> w(fp8->weight, fp8->weight + N * K);
  const std::vector<float> s(fp8->weight_scale, fp8->weight_scale + N);
  const auto want = values_of<float>(expected);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) ASSERT_EQ(e4m3_to_f32(w[n * K + k]) * s[n], want[n * K + k]) << n << "," << k;
  std::filesystem::remove_all(dir);
}

TEST(GptqInteropTest, PackerAndLoaderAgreeWithTheNumpyReference) {
  const std::string dir = ::testing::TempDir() + "/crosspoint_gptq_interop";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(fixture_path("gptq_interop.safetensors"), dir + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  auto tensors = SafetensorsModel::open_dir(dir);
  ASSERT_TRUE(tensors.is_ok()) << tensors.status().to_string();
  const SafetensorsModel& t = *tensors.value();
  const int64_t K = 64, N = 16, G = 16;

  Int4Quantized q;
  q.in_features = K;
  q.out_features = N;
  q.group_size = G;
  q.q = values_of<uint8_t>(t.find("codes"));
  q.zeros = values_of<uint8_t>(t.find("zeros"));
  q.scales = values_of<uint16_t>(t.find("layer.scales"));
  q.g_idx = values_of<int32_t>(t.find("layer.g_idx"));
  const auto packed = pack_gptq_tensors(q, "layer");
  EXPECT_EQ(packed[0].bytes, values_of<uint8_t>(t.find("layer.qweight")));
  EXPECT_EQ(packed[1].bytes, values_of<uint8_t>(t.find("layer.qzeros")));

  ModelConfig config;
  config.quantization_config_json = R"({"quant_method": "gptq", "bits": 4, "group_size": 16, "desc_act": true,
                                        "sym": false, "checkpoint_format": "gptq"})";
  LinearWeightRequest r;
  r.tensors = &t;
  r.config = &config;
  r.prefix = "layer";
  r.in_features = K;
  r.out_features = N;
  auto layer = gptq_linear_weight_format()->load(r);
  ASSERT_TRUE(layer.is_ok()) << layer.status().to_string();
  const auto* gptq = dynamic_cast<const GptqLinearWeight*>(layer.value().get());
  ASSERT_NE(gptq, nullptr);
  EXPECT_EQ(gptq->dequantize(), values_of<float>(t.find("expected.weight")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace crosspoint
