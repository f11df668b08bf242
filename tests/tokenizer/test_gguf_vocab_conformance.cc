// GGUF vocabularies against llama.cpp's own tokenizer test files: models/ggml-vocab-*.gguf
// with their .inp (texts) and .out (the ids llama.cpp's test-tokenizer-0 expects, without
// BOS), from the llama-cpp-python sdist that scripts/setup.sh fetches (fetch_minja).
// SentencePiece vocabularies (Llama 2's, Phi-3's) go through gguf_spm_vocab.h, byte-level
// BPE ones (Qwen2's, Llama 3's, GPT-2's) through the pre-tokenizer that tokenizer.ggml.pre names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "tokenizer/gguf_spm_vocab.h"
#include "tokenizer/hf_tokenizer_writer.h"
#include "tokenizer_test_util.h"

namespace crosspoint {
namespace {

std::string vocab_dir() { return cache_dir() + "/third_party/llama-cpp-python-0.3.16/vocab"; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path << " is missing: run scripts/setup.sh";
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

// test-tokenizer-0's reading: texts separated by "\n__ggml_vocab_test__\n", one line of ids each.
std::vector<VocabCase> read_cases(const std::string& name) {
  const std::string inputs = read_file(vocab_dir() + "/ggml-vocab-" + name + ".gguf.inp");
  const std::string outputs = read_file(vocab_dir() + "/ggml-vocab-" + name + ".gguf.out");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  for (size_t pos = 0; pos < inputs.size();) {
    const size_t next = inputs.find(separator, pos);
    cases.push_back({inputs.substr(pos, next == std::string::npos ? std::string::npos : next - pos), {}});
    if (next == std::string::npos) break;
    pos = next + separator.size();
  }
  std::istringstream lines(outputs);
  std::string line;
  for (size_t i = 0; std::getline(lines, line); ++i) {
    if (i >= cases.size()) {
      ADD_FAILURE() << name << ": more id lines than texts";
      break;
    }
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
  }
  return cases;
}

class LlamaCppVocab : public ::testing::TestWithParam<const char*> {};

TEST_P(LlamaCppVocab, EncodesAsLlamaCppTestsExpect) {
  const std::string name = GetParam();
  auto gguf = GgufFile::open(vocab_dir() + "/ggml-vocab-" + name + ".gguf");
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string() << " (run scripts/setup.sh)";
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  const auto cases = read_cases(name);
  ASSERT_GE(cases.size(), 30u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ((*tokenizer)->encode(c.text), c.ids);
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, LlamaCppVocab,
                         ::testing::Values("llama-spm", "phi-3", "qwen2", "llama-bpe", "gpt-2"), [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// Decoding gives the text back (SentencePiece's prefix space taken off again) and BOS comes
// first, as llama.cpp adds it for these files.
TEST(LlamaCppVocab, SentencePieceDecodesWhatItEncodesAndAddsBos) {
  auto gguf = GgufFile::open(vocab_dir() + "/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  auto tokenizer = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  for (const auto& c : read_cases("llama-spm")) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ((*tokenizer)->decode(c.ids, false), c.text);
  }
  EXPECT_EQ((*tokenizer)->with_special_tokens((*tokenizer)->encode("Hello world")),
            (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ((*tokenizer)->decode(std::vector<int32_t>{1, 15043, 3186, 2}, true), "Hello world");
}

// `crosspoint convert` writes the vocabulary as tokenizer.json + tokenizer_config.json; read back
// from that directory it encodes as the GGUF does and adds the same BOS.
TEST(LlamaCppVocab, SentencePieceFilesWrittenForConvertReadBackTheSame) {
  auto gguf = GgufFile::open(vocab_dir() + "/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(gguf.is_ok()) << gguf.status().to_string();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("crosspoint_spm_vocab_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Status written = write_hf_tokenizer_files(*gguf, dir.string());
  ASSERT_TRUE(written.is_ok()) << written.to_string();
  auto tokenizer = Tokenizer::from_model_dir(dir.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  for (const auto& c : read_cases("llama-spm")) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ((*tokenizer)->encode(c.text), c.ids);
  }
  EXPECT_EQ((*tokenizer)->bos_token_id(), 1);
  EXPECT_EQ((*tokenizer)->with_special_tokens((*tokenizer)->encode("Hello world")),
            (std::vector<int32_t>{1, 15043, 3186}));
}

// Merges come from the scores: the best-scored whole piece first, and a piece's splits by
// their halves' ids; splits fall between characters, never inside one.
TEST(SpmMerges, RankedByTheWholePiecesScore) {
  const std::vector<std::string> pieces = {"a", "b", "c", "ab", "bc", "abc", "\xC3\xA9", "x\xC3\xA9"};
  const std::vector<double> scores = {0, 0, 0, -3, -1, -2, 0, -4};
  const auto merges = spm_merges_from_scores(pieces, scores);
  const std::vector<std::pair<std::string, std::string>> expected = {{"b", "c"}, {"a", "bc"}, {"ab", "c"}, {"a", "b"}};
  EXPECT_EQ(merges, expected);
}

}  // namespace
}  // namespace crosspoint
