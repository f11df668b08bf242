// A GGUF SentencePiece vocabulary (tokenizer.ggml.model "llama": Llama 2, Mistral v0.1,
// TinyLlama, Phi-3) as the byte-fallback BPE tokenizer.json that runs it. The GGUF holds
// pieces, scores and types but no merge list; the merges are every split of a piece into two
// pieces, ranked by the whole piece's score, the way Hugging Face builds them when it reads a
// GGUF (its GGUF tokenizer converter) and the order llama.cpp's SPM tokenizer merges in.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace crosspoint {

class GgufFile;

// Every (left, right) whose concatenation and both halves are pieces, highest-scored result
// first; the splits of one piece by their halves' ids.
std::vector<std::pair<std::string, std::string>> spm_merges_from_scores(const std::vector<std::string>& pieces,
                                                                        const std::vector<double>& scores);

// tokenizer.json for a "llama" (SentencePiece) GGUF vocabulary.
Result<nlohmann::json> spm_tokenizer_json_from_gguf(const GgufFile& gguf);

}  // namespace crosspoint
