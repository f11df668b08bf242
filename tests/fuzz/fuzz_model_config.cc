// config.json → ModelConfig (architecture, sizes, RoPE scaling, eos ids), then its
// quantization_config → QuantConfig (GPTQ or compressed-tensors FP8). The whole input is also
// parsed as a quantization_config so the quantisation parser is reached directly.
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/model_config.h"
#include "quant/quant_config.h"

namespace {

void exercise_quant_config(const std::string& text) {
  auto quant = crosspoint::parse_quant_config(text, "config.json");
  if (!quant.is_ok()) return;
  (void)quant->is_ignored("lm_head");
  (void)quant->is_ignored("model.layers.0.mlp.down_proj");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto config = crosspoint::parse_model_config(text, "config.json");
  if (config.is_ok()) exercise_quant_config(config->quantization_config_json);
  exercise_quant_config(text);
  return 0;
}
