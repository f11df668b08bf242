// The chat template path: tokenizer_config.json → the default system prompt read off its
// chat_template (a string or a list of named templates), then a conversation of arbitrary
// roles and contents rendered to the prompt.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/fuzz_temp_dir.h"
#include "tokenizer/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crosspoint;
  FuzzedDataProvider input(data, size);
  fuzz::write_fuzz_file("tokenizer_config.json", input.ConsumeRandomLengthString(size));
  ChatTemplate chat_template = chat_template_for_model_dir(fuzz::fuzz_temp_dir());
  // The template text on its own, too: the literal scanner without the JSON layer.
  (void)default_system_prompt_from_template(input.ConsumeRandomLengthString(size));
  std::vector<ChatMessage> messages;
  while (input.remaining_bytes() > 0 && messages.size() < 64) {
    ChatMessage message;
    message.role = input.ConsumeBool() ? input.PickValueInArray<std::string>({"system", "user", "assistant"})
                                       : input.ConsumeRandomLengthString(16);
    message.content = input.ConsumeRandomLengthString(size);
    messages.push_back(std::move(message));
  }
  (void)apply_chat_template(chat_template, messages, /*add_generation_prompt=*/true);
  (void)apply_chat_template(chat_template, messages, /*add_generation_prompt=*/false);
  return 0;
}
