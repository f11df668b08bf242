#include "tokenizer/unicode_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <fmt/format.h>

namespace crosspoint {

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread match state: a JIT stack big enough for long whitespace runs (the default
// 32 KiB can overflow on `\s+(?!\S)` over tens of thousands of spaces) and match data.
struct ThreadMatchState {
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_match_data* data = nullptr;
  ThreadMatchState() {
    jit_stack = pcre2_jit_stack_create(64 * 1024, 8 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
    data = pcre2_match_data_create(32, nullptr);
  }
  ~ThreadMatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

}  // namespace

Result<UnicodeRegex> UnicodeRegex::compile(const std::string& pattern, const std::string& where) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return corrupt(fmt::format("{}: regex does not compile at offset {}: {}", where, error_offset,
                               reinterpret_cast<const char*>(message)));
  }
  auto compiled = std::make_shared<Compiled>();
  compiled->code = code;
  compiled->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  UnicodeRegex regex;
  regex.pattern_ = pattern;
  regex.compiled_ = std::move(compiled);
  return regex;
}

void UnicodeRegex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) const {
  ThreadMatchState& state = thread_match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    // The text was validated once by the caller; skip PCRE2's per-call UTF check.
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK,
                                                    state.data, state.context)
                                  : pcre2_match(compiled_->code, subject, text.size(), offset, PCRE2_NO_UTF_CHECK,
                                                state.data, state.context);
    if (rc < 0) break;  // no more matches (or a resource limit: the rest stays one gap)
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      offset = end;
    } else {
      // Empty match: step over one whole UTF-8 character.
      offset = begin + 1;
      while (offset < text.size() && (static_cast<uint8_t>(text[offset]) & 0xC0) == 0x80) ++offset;
    }
  }
}

}  // namespace crosspoint
