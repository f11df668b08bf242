// The chat template path: a tokenizer_config.json of arbitrary bytes (its chat_template, when it
// has one, parsed; a model's template is the operator's file, so arbitrary ones are parsed, not
// run), then a conversation of arbitrary roles, contents and template variables rendered by
// ChatML and by the real templates of Qwen2.5, Qwen3 and Llama 3.1 that scripts/setup.sh
// fetches (when the cache holds them).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/mapped_file.h"
#include "fuzz/fuzz_temp_dir.h"
#include "tokenizer/chat_template.h"

namespace {

std::vector<crosspoint::ChatTemplate> real_templates() {
  using namespace crosspoint;
  const char* cache = std::getenv("CROSSPOINT_CACHE");
  const std::string root =
      std::string(cache ? cache : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/crosspoint") +
      "/third_party/llama-cpp-python-0.3.16/templates/";
  std::vector<ChatTemplate> templates{ChatTemplate{}};
  for (const char* name :
       {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja"}) {
    auto source = read_text_file(root + name);
    if (!source.is_ok()) continue;
    auto compiled = chat_template_from_source(*source, "<s>", "</s>");
    if (compiled.is_ok()) templates.push_back(std::move(compiled.value()));
  }
  return templates;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  static const std::vector<ChatTemplate> templates = real_templates();
  FuzzedDataProvider input(data, size);
  fuzz::write_fuzz_file("tokenizer_config.json", input.ConsumeRandomLengthString(size));
  (void)chat_template_for_model_dir(fuzz::fuzz_temp_dir());
  const ChatTemplate& chat_template = templates[input.ConsumeIntegralInRange<size_t>(0, templates.size() - 1)];
  ChatRenderOptions options;
  options.add_generation_prompt = input.ConsumeBool();
  options.continue_final_message = input.ConsumeBool();
  if (input.ConsumeBool()) {
    options.kwargs = nlohmann::json::parse(input.ConsumeRandomLengthString(64), nullptr, /*allow_exceptions=*/false);
    if (options.kwargs.is_discarded()) options.kwargs = nullptr;
  }
  std::vector<ChatMessage> messages;
  while (input.remaining_bytes() > 0 && messages.size() < 64) {
    ChatMessage message;
    message.role = input.ConsumeBool() ? input.PickValueInArray<std::string>({"system", "user", "assistant"})
                                       : input.ConsumeRandomLengthString(16);
    message.content = input.ConsumeRandomLengthString(size);
    messages.push_back(std::move(message));
  }
  (void)apply_chat_template(chat_template, messages, options);
  return 0;
}
