// `crosspoint quantize` as a library call: reads a dense Hugging Face checkpoint and writes
// it as W8A8-FP8 (compressed-tensors FP8-dynamic), W8A8-INT8 (compressed-tensors W8A8:
// int8 per-channel weights, dynamic per-token int8 activations) or W4A16 (GPTQ int4, v1
// zero-minus-one layout), with config.json's quantization_config and the tokenizer files copied. The
// embeddings, norms and lm_head are copied unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "quant/int4_quantizer.h"

namespace crosspoint {

enum class QuantizeScheme { kW8A8Fp8, kW8A8Int8, kW4A16 };
enum class Int4Method { kGptq, kRtn };

struct QuantizeModelOptions {
  std::string model_dir;  // dense input
  std::string out_dir;
  QuantizeScheme scheme = QuantizeScheme::kW8A8Fp8;
  Int4Method int4_method = Int4Method::kGptq;
  Int4QuantOptions int4;
  // GPTQ calibration: token ids of each sample (all run in one forward pass).
  std::vector<std::vector<int32_t>> calibration;
  bool overwrite = false;  // replace an existing out_dir
  // "cpu", or "cuda": W8A8-FP8 and W8A8-INT8 weights quantised on the GPU (the same bytes), and
  // GPTQ's calibration and solve on the GPU (quant/cuda/gpu_gptq_calibration.h); RTN needs no
  // calibration and stays on the CPU.
  std::string device = "cpu";
};

Status quantize_model(const QuantizeModelOptions& options);

// Files copied next to the weights when present in the input directory.
const std::vector<std::string>& tokenizer_file_names();

}  // namespace crosspoint
