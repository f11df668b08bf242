// Writes the tokenizer of a GGUF file as Hugging Face files into out_dir:
//   tokenizer.json         byte-level BPE (vocab, merges, added tokens, the pre-tokenizer
//                          that tokenizer.ggml.pre means) that `tokenizers` loads
//   tokenizer_config.json  bos/eos/pad/unk tokens and chat_template from the GGUF
// `crosspoint convert` calls it; the files encode exactly as Tokenizer::from_gguf does.
#pragma once

#include <string>

#include "common/status.h"

namespace crosspoint {

class GgufFile;

Status write_hf_tokenizer_files(const GgufFile& gguf, const std::string& out_dir);

}  // namespace crosspoint
