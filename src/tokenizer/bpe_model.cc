#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <mutex>
#include <queue>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace crosspoint {

namespace {

// Words longer than this are not cached (they are rare and would bloat the cache).
constexpr size_t kMaxCachedWordBytes = 128;
// The cache is cleared when it reaches this many words (bounded memory on huge corpora).
constexpr size_t kMaxCachedWords = 1 << 20;

}  // namespace

Result<BpeModel> BpeModel::create(const std::unordered_map<std::string, int32_t>& vocab,
                                  const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                                  const std::string& where) {
  BpeModel model;
  model.ignore_merges_ = ignore_merges;
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab.find(byte_level_char(static_cast<uint8_t>(b)));
    model.byte_to_id_[b] = it == vocab.end() ? -1 : it->second;
  }
  if (ignore_merges) {
    for (const auto& [text, id] : vocab) {
      if (auto bytes = byte_level_to_bytes(text)) model.id_by_bytes_.emplace(std::move(*bytes), id);
    }
  }
  CROSSPOINT_RETURN_IF_ERROR(model.add_merges(vocab, merges, where));
  return model;
}

Result<BpeModel> BpeModel::create_char_level(const std::unordered_map<std::string, int32_t>& vocab,
                                             const std::vector<std::pair<std::string, std::string>>& merges,
                                             bool ignore_merges, bool byte_fallback, int32_t unk_id, bool fuse_unk,
                                             const std::string& where) {
  BpeModel model;
  model.char_level_ = true;
  model.ignore_merges_ = ignore_merges;
  model.id_by_text_ = vocab;
  if (ignore_merges) model.id_by_bytes_ = vocab;
  model.unk_id_ = unk_id;
  model.fuse_unk_ = fuse_unk;
  model.byte_to_id_.fill(-1);
  model.fallback_byte_id_.fill(-1);
  for (int b = 0; b < 256 && byte_fallback; ++b) {
    const auto it = vocab.find(fmt::format("<0x{:02X}>", b));
    if (it != vocab.end()) model.fallback_byte_id_[b] = it->second;
  }
  CROSSPOINT_RETURN_IF_ERROR(model.add_merges(vocab, merges, where));
  return model;
}

Status BpeModel::add_merges(const std::unordered_map<std::string, int32_t>& vocab,
                            const std::vector<std::pair<std::string, std::string>>& merges, const std::string& where) {
  BpeModel& model = *this;
  model.merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_it = vocab.find(left);
    const auto right_it = vocab.find(right);
    const auto merged_it = vocab.find(left + right);
    if (left_it == vocab.end() || right_it == vocab.end() || merged_it == vocab.end())
      return corrupt(
          fmt::format("{}: merge {} \"{} {}\" uses a token that is not in the vocabulary", where, rank, left, right));
    // A repeated pair keeps its last rank, as HF's map built from the list does.
    model.merges_.insert_or_assign(pair_key(left_it->second, right_it->second),
                                   Merge{static_cast<int32_t>(rank), merged_it->second});
  }
  return Status::ok();
}

void BpeModel::char_symbols(std::string_view word, std::vector<int32_t>& ids) const {
  // As HF's BPE: an unknown character's unk is held and only added before the next
  // character found in the vocabulary (or at the end), so with fuse_unk it fuses with later
  // unknown characters across characters spelt as <0xNN> tokens, which go out at once.
  bool unk_pending = false;
  for (size_t pos = 0; pos < word.size();) {
    const Utf8Char c = decode_utf8_char(word, pos);
    const std::string text(word.substr(pos, c.length));
    pos += c.length;
    if (const auto it = id_by_text_.find(text); it != id_by_text_.end()) {
      if (unk_pending) ids.push_back(unk_id_);
      unk_pending = false;
      ids.push_back(it->second);
      continue;
    }
    bool all_bytes = true;
    for (char byte : text) all_bytes = all_bytes && fallback_byte_id_[static_cast<uint8_t>(byte)] >= 0;
    if (all_bytes) {
      for (char byte : text) ids.push_back(fallback_byte_id_[static_cast<uint8_t>(byte)]);
      continue;
    }
    if (unk_id_ < 0) continue;  // no unk token: the character is dropped, as HF does
    if (unk_pending && !fuse_unk_) ids.push_back(unk_id_);
    unk_pending = true;
  }
  if (unk_pending) ids.push_back(unk_id_);
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (word.size() == 1 && !char_level_) {
    const int32_t id = byte_to_id_[static_cast<uint8_t>(word[0])];
    if (id >= 0) ids.push_back(id);
    return;
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::shared_lock lock(cache_->mutex);
    const auto it = cache_->ids_by_word.find(std::string(word));
    if (it != cache_->ids_by_word.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> word_ids;
  merge_word(word, word_ids);
  ids.insert(ids.end(), word_ids.begin(), word_ids.end());
  if (cacheable) {
    std::unique_lock lock(cache_->mutex);
    if (cache_->ids_by_word.size() >= kMaxCachedWords) cache_->ids_by_word.clear();
    cache_->ids_by_word.emplace(std::string(word), std::move(word_ids));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (ignore_merges_) {
    const auto it = id_by_bytes_.find(std::string(word));
    if (it != id_by_bytes_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  // A doubly linked list of symbols; merged-away symbols get id -1.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  std::vector<int32_t> first_ids;
  if (char_level_) {
    char_symbols(word, first_ids);
  } else {
    for (char c : word) {
      const int32_t id = byte_to_id_[static_cast<uint8_t>(c)];
      if (id >= 0) first_ids.push_back(id);  // a byte without a token is dropped (HF without unk_token)
    }
  }
  for (int32_t id : first_ids) {
    const int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // Candidate merges ordered by (rank, position): lowest rank first, leftmost on ties.
  struct Candidate {
    int32_t rank;
    int32_t left;     // symbol index
    int32_t left_id;  // ids when the candidate was made (stale if they changed)
    int32_t right_id;
    int32_t merged_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  const auto push_candidate = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[left].next;
    if (right < 0) return;
    const auto it = merges_.find(pair_key(symbols[left].id, symbols[right].id));
    if (it == merges_.end()) return;
    queue.push({it->second.rank, left, symbols[left].id, symbols[right].id, it->second.merged_id});
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push_candidate(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    if (left.id != c.left_id || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    if (right.id != c.right_id) continue;
    left.id = c.merged_id;
    right.id = -1;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;
    push_candidate(left.prev);
    push_candidate(c.left);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

}  // namespace crosspoint
