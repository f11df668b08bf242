#include "model/tensor_parallel_plan.h"

#include <algorithm>
#include <string>

namespace crosspoint {

Result<std::vector<TensorParallelRank>> plan_tensor_parallel(const ModelConfig& c, int32_t world_size) {
  const std::string tp = "tensor parallel size " + std::to_string(world_size);
  if (world_size < 1) return invalid_argument(tp + " must be at least 1");
  const int64_t w = world_size, H = c.num_attention_heads, Hkv = c.num_key_value_heads, I = c.intermediate_size;
  if (H % w != 0)
    return invalid_argument("the number of attention heads (" + std::to_string(H) + ") is not divisible by the " + tp);
  if (Hkv % w != 0 && w % Hkv != 0)
    return invalid_argument("the number of KV heads (" + std::to_string(Hkv) + ") and the " + tp +
                            " do not divide one another");
  if (I % w != 0)
    return invalid_argument("the intermediate size (" + std::to_string(I) + ") is not divisible by the " + tp);
  const int64_t heads = H / w, inter = I / w, vocab = (c.vocab_size + w - 1) / w;
  std::vector<TensorParallelRank> ranks(world_size);
  for (int32_t r = 0; r < world_size; ++r) {
    TensorParallelRank& rank = ranks[r];
    rank.rank = r;
    rank.world_size = world_size;
    rank.q_heads = {r * heads, (r + 1) * heads};
    if (Hkv % w == 0) {
      rank.kv_heads = {r * (Hkv / w), (r + 1) * (Hkv / w)};
    } else {  // each KV head on w / Hkv consecutive ranks
      const int64_t head = r / (w / Hkv);
      rank.kv_heads = {head, head + 1};
    }
    rank.intermediate = {r * inter, (r + 1) * inter};
    rank.vocab = {std::min<int64_t>(r * vocab, c.vocab_size), std::min<int64_t>((r + 1) * vocab, c.vocab_size)};
  }
  return ranks;
}

}  // namespace crosspoint
