#include "tokenizer/jinja_template.h"

#include <time.h>

#include <chrono>
#include <exception>
#include <iomanip>
#include <sstream>

#include <minja.hpp>

namespace crosspoint {

struct JinjaTemplate::Parsed {
  std::shared_ptr<minja::TemplateNode> root;
};

JinjaTemplate::JinjaTemplate(std::string bos_token, std::string eos_token, std::unique_ptr<Parsed> parsed)
    : bos_token_(std::move(bos_token)), eos_token_(std::move(eos_token)), parsed_(std::move(parsed)) {}

JinjaTemplate::~JinjaTemplate() = default;

Result<std::shared_ptr<const JinjaTemplate>> JinjaTemplate::compile(const std::string& source,
                                                                    const std::string& bos_token,
                                                                    const std::string& eos_token) {
  auto parsed = std::make_unique<Parsed>();
  try {
    // transformers renders with trim_blocks and lstrip_blocks and drops the trailing newline.
    parsed->root = minja::Parser::parse(
        source, minja::Options{.trim_blocks = true, .lstrip_blocks = true, .keep_trailing_newline = false});
  } catch (const std::exception& e) {
    return invalid_argument(std::string("chat template does not parse: ") + e.what());
  }
  if (!parsed->root) return invalid_argument("chat template does not parse");
  return std::shared_ptr<const JinjaTemplate>(new JinjaTemplate(bos_token, eos_token, std::move(parsed)));
}

namespace {

// strftime_now(format) as transformers defines it: the local time now, formatted.
minja::Value strftime_now_function() {
  return minja::Value::callable([](const std::shared_ptr<minja::Context>&, minja::ArgumentsValue& args) {
    args.expectArgs("strftime_now", {1, 1}, {0, 0});
    const std::string format = args.args[0].get<std::string>();
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
    localtime_r(&now, &local);
    std::ostringstream out;
    out << std::put_time(&local, format.c_str());
    return minja::Value(out.str());
  });
}

}  // namespace

Result<std::string> JinjaTemplate::render(const nlohmann::json& messages, bool add_generation_prompt,
                                          const nlohmann::json& extra) const {
  if (!messages.is_array()) return invalid_argument("chat template: messages must be an array");
  if (!extra.is_null() && !extra.is_object())
    return invalid_argument("chat template: extra variables must be an object");
  try {
    // minja keeps objects in insertion order; the messages arrive as our JSON, whose order is
    // by key, which no template depends on.
    auto context = minja::Context::make(minja::Value(nlohmann::ordered_json::object()));
    if (!extra.is_null()) {
      for (const auto& [key, value] : extra.items())
        context->set(key, minja::Value(nlohmann::ordered_json::parse(value.dump())));
    }
    context->set("messages", minja::Value(nlohmann::ordered_json::parse(messages.dump())));
    context->set("add_generation_prompt", minja::Value(add_generation_prompt));
    context->set("bos_token", minja::Value(bos_token_));
    context->set("eos_token", minja::Value(eos_token_));
    context->set("strftime_now", strftime_now_function());
    return parsed_->root->render(context);
  } catch (const std::exception& e) { return invalid_argument(std::string("chat template: ") + e.what()); }
}

}  // namespace crosspoint
