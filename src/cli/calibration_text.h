// Token sequences for calibration and evaluation, shared by `quantize` and `eval`: ShareGPT
// conversations (prompt, then reply) from the setup script's copy or a ShareGPT-format
// JSON file, tokenised and cut to a maximum length.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::cli {

// dataset: "sharegpt" (CROSSPOINT_CACHE/datasets/ShareGPT_V3_complete_subset.json) or
// a path. Takes conversations in file order starting at `skip`, keeps those of at least
// min_tokens tokens, each cut to max_tokens, until num_samples are found. pack: the
// conversations are joined (each followed by a newline) and the token stream cut into samples of
// exactly max_tokens tokens (the last partial one dropped), as GPTQ calibration on long
// sequences wants; fails when the file holds fewer than num_samples * max_tokens tokens.
Result<std::vector<std::vector<int32_t>>> load_text_samples(const std::string& dataset, const Tokenizer& tokenizer,
                                                            int num_samples, int max_tokens, int min_tokens, int skip,
                                                            bool pack = false);

}  // namespace crosspoint::cli
