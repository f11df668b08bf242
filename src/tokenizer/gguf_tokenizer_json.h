// GGUF tokenizer metadata (tokenizer.ggml.*) as the Hugging Face files it stands for:
// tokenizer.json (byte-level BPE with the pre-tokenizer that tokenizer.ggml.pre names in
// llama.cpp, or SentencePiece's byte-fallback BPE: gguf_spm_vocab.h) and tokenizer_config.json (bos/eos/pad/unk,
// chat_template). Tokenizer::from_gguf and write_hf_tokenizer_files both use these, so the files written are what we
// run.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace crosspoint {

class GgufFile;

Result<nlohmann::json> tokenizer_json_from_gguf(const GgufFile& gguf);
Result<nlohmann::json> tokenizer_config_from_gguf(const GgufFile& gguf);

// The pre_tokenizer and normalizer a llama.cpp pre-tokenizer name means ("qwen2",
// "smollm", "gpt-2", "llama-bpe", ...); unsupported for names we do not know.
struct PreTokenizerSpec {
  nlohmann::json normalizer;  // null or {"type": "NFC"}
  nlohmann::json pre_tokenizer;
  bool ignore_merges = false;
};
Result<PreTokenizerSpec> pre_tokenizer_for_llama_cpp_name(const std::string& name, const std::string& where);

}  // namespace crosspoint
