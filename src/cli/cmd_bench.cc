// crosspoint bench serve: load generator with vLLM-compatible metrics for any
// OpenAI-compatible server. Options mirror `vllm bench serve`; see docs/bench.md.
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_serve.h"
#include "bench/save_result.h"
#include "bench/served_models.h"
#include "bench/vllm_bench_flags.h"
#include "cli/bench_vllm_flags.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/paths.h"
#include "tokenizer/tokenizer.h"

namespace crosspoint::cli {

namespace {

// "inf" or a number.
Result<double> parse_rate(const std::string& text, const char* option) {
  if (text == "inf" || text == "Infinity") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(value > 0)) {
    return invalid_argument(std::string(option) + ": '" + text + "' must be a number > 0 or inf");
  }
  return value;
}

// 1,000 concurrent streams need more descriptors than the usual soft limit of 1,024.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// --tokenizer, else --model when it is a directory, else the default model's directory.
std::string pick_tokenizer_dir(const std::string& tokenizer_arg, const std::string& model) {
  if (!tokenizer_arg.empty()) return tokenizer_arg;
  if (!model.empty() && std::filesystem::is_directory(model)) return model;
  if (std::filesystem::exists(std::filesystem::path(default_model_dir()) / "tokenizer.json"))
    return default_model_dir();
  return "";
}

}  // namespace

int run_bench(int argc, char** argv) {
  CLI::App app{"Benchmark an OpenAI-compatible server with vLLM's definitions and result keys.", "crosspoint bench"};
  app.require_subcommand(1);
  CLI::App* serve = app.add_subcommand(
      "serve",
      "Send a dataset of streamed requests to the server, measure TTFT/TPOT/ITL/E2EL, throughput and goodput "
      "exactly as `vllm bench serve` does, print vLLM's summary table and write a result JSON with vLLM's keys "
      "plus per-request records, client overhead and the server's /metrics. Takes `vllm bench serve`'s flags "
      "(docs/bench.md has the table).");
  bench::BenchOptions o;
  std::optional<std::string> backend, endpoint;
  std::string base_url, host = "127.0.0.1";
  int port = 8000;
  std::string request_rate_text = "inf", burstiness_text = "1.0";
  std::string percentile_metrics_text = "ttft,tpot,itl", metric_percentiles_text = "99";
  std::vector<std::string> goodput_items, header_items, metadata_items;
  std::optional<double> temperature;
  std::optional<int> max_concurrency, sharegpt_output_len, input_len, output_len, custom_output_len;
  bool disable_tqdm = false, no_oversample = false;
  VllmBenchFlags vllm_flags;

  serve->add_option("--backend", backend,
                    "openai or vllm: raw prompts to /v1/completions; openai-chat: one user message to "
                    "/v1/chat/completions (default: openai, or what --endpoint implies)");
  serve->add_option("--base-url", base_url, "Server root URL, e.g. http://127.0.0.1:8000 (default: --host/--port)");
  serve->add_option("--host", host, "Server host when --base-url is not given")->capture_default_str();
  serve->add_option("--port", port, "Server port when --base-url is not given")->capture_default_str();
  serve->add_option("--endpoint", endpoint,
                    "API route: /v1/completions or /v1/chat/completions (default: the backend's)");
  serve->add_option("--model", o.model,
                    "Model name: the result's model_id and every request's \"model\" field (default: the first "
                    "model the server's /v1/models lists)");
  serve->add_option("--served-model-name", o.served_model_name,
                    "The \"model\" field of every request when it differs from --model");
  serve->add_option("--tokenizer", o.tokenizer_dir,
                    "Hugging Face model directory with tokenizer.json (or the file itself), for prompt lengths and for "
                    "counting output tokens when the server sends no usage (default: --model if it is a directory, "
                    "else the default model)");
  serve
      ->add_option("--dataset-name", o.dataset_name,
                   "random (token runs of set lengths), sharegpt (real conversations, vLLM's sampling rules), "
                   "sharegpt_multi_turn (ShareGPT conversations turn by turn on /v1/chat/completions, each turn "
                   "resending the history with the server's own answers), prefix_repetition (prompts sharing a few "
                   "prefixes), custom (a JSONL file of {\"prompt\": ...}), sonnet (vLLM's sonnet.txt) or burstgpt "
                   "(the BurstGPT CSV's lengths)")
      ->capture_default_str();
  serve->add_option("--dataset-path", o.dataset_path,
                    "The dataset's file (sharegpt: default the copy scripts/setup.sh puts in the cache)");
  serve
      ->add_option("--num-prompts", o.num_prompts,
                   "Number of requests to send (sharegpt_multi_turn: number of conversations)")
      ->capture_default_str();
  serve->add_option("--max-concurrency", max_concurrency,
                    "Most requests in flight at once; the rest wait in arrival order (default: no limit)");
  serve
      ->add_option("--request-rate", request_rate_text,
                   "Mean arrivals per second (gamma/Poisson process), or inf to release all at t = 0")
      ->capture_default_str();
  serve
      ->add_option("--burstiness", burstiness_text,
                   "Gamma shape of the inter-arrival gaps: 1 = Poisson, < 1 burstier, > 1 smoother, inf = "
                   "constant gaps")
      ->capture_default_str();
  serve->add_option("--ramp-up-strategy", o.ramp_up_strategy,
                    "linear or exponential: the request rate goes from --ramp-up-start-rps to --ramp-up-end-rps "
                    "over the run (instead of --request-rate)");
  serve->add_option("--ramp-up-start-rps", o.ramp_up_start_rps, "Ramp-up: the first request's rate (req/s)");
  serve->add_option("--ramp-up-end-rps", o.ramp_up_end_rps, "Ramp-up: the last request's rate (req/s)");
  serve->add_option("--seed", o.seed, "Seed of the dataset sample and the arrival times")->capture_default_str();
  serve->add_option("--input-len", input_len, "Prompt length for the random dataset (as --random-input-len)");
  serve->add_option("--output-len", output_len,
                    "Output length for the random, sharegpt, custom and prefix_repetition datasets");
  auto sampling = serve->add_option_group("sampling parameters (each sent only when given)");
  sampling->add_option("--temperature", temperature, "Sampling temperature; 0 = greedy");
  sampling->add_option("--top-p", o.sampling.top_p, "top_p");
  sampling->add_option("--top-k", o.sampling.top_k, "top_k");
  sampling->add_option("--min-p", o.sampling.min_p, "min_p");
  sampling->add_option("--frequency-penalty", o.sampling.frequency_penalty, "frequency_penalty");
  sampling->add_option("--presence-penalty", o.sampling.presence_penalty, "presence_penalty");
  sampling->add_option("--repetition-penalty", o.sampling.repetition_penalty, "repetition_penalty");
  serve->add_option("--extra-body", o.extra_body_json,
                    "A JSON object merged into every request body, e.g. '{\"chat_template_kwargs\": "
                    "{\"enable_thinking\": false}}'");
  serve->add_option("--logprobs", o.logprobs, "logprobs sent with every /v1/completions request");
  serve->add_option("--header", header_items, "Extra HTTP headers, KEY=VALUE (repeatable)")->expected(1, -1);
  serve->add_option("--request-id-prefix", o.request_id_prefix,
                    "x-request-id of request i is PREFIX followed by i (default: a UUID per request, which every "
                    "server accepts)");
  serve->add_flag("--ignore-eos", o.ignore_eos,
                  "Send ignore_eos: true so each request generates its full max_tokens (always on for random)");
  serve
      ->add_option("--percentile-metrics", percentile_metrics_text,
                   "Metrics whose statistics are reported: any of ttft,tpot,itl,e2el")
      ->capture_default_str();
  serve
      ->add_option("--metric-percentiles", metric_percentiles_text,
                   "Percentiles reported for each metric, comma-separated, e.g. 50,90,99")
      ->capture_default_str();
  serve
      ->add_option("--goodput", goodput_items,
                   "SLOs in ms that make a request 'good', e.g. --goodput ttft:500 tpot:50 e2el:10000; goodput "
                   "= good requests per second")
      ->expected(1, -1);
  serve
      ->add_option("--num-warmups", o.num_warmups,
                   "Copies of the first request sent (and not counted) before timing starts")
      ->capture_default_str();
  serve->add_option("--api-key", o.api_key, "Bearer token (default: $OPENAI_API_KEY when set)");
  auto saving = serve->add_option_group("result files (with none of them, only the summary is printed)");
  saving->add_option("--result-file", o.result_file,
                     "Write the full result JSON (every per-request list, pretty-printed) to this path");
  saving->add_flag("--save-result", o.save_result,
                   "Write the result as vLLM does: one line of JSON named "
                   "{label}-{rate}qps[-concurrency{N}]-{model}-{date}.json");
  saving->add_flag("--append-result", o.append_result, "Append that line to the file instead of replacing it");
  saving->add_flag("--save-detailed", o.save_detailed,
                   "With --save-result: keep the per-request lists (input_lens, ttfts, itls, generated_texts, ...)");
  saving->add_option("--result-dir", o.result_dir, "Directory of the --save-result file (default: here)");
  saving->add_option("--result-filename", o.result_filename, "Name of the --save-result file");
  saving->add_option("--metadata", metadata_items, "KEY=VALUE pairs stored in the --save-result JSON")->expected(1, -1);
  serve->add_option("--sharegpt-output-len", sharegpt_output_len,
                    "ShareGPT: fixed output length instead of the length of the dataset's reply");
  serve->add_option("--custom-output-len", custom_output_len, "custom: max_tokens of every request (256)");
  serve->add_flag("--skip-chat-template,--custom-skip-chat-template", o.skip_chat_template,
                  "custom: send each prompt as written, without the tokenizer's chat template");
  serve->add_flag("--disable-shuffle", o.disable_shuffle, "custom: keep the file's order");
  serve->add_flag("--no-oversample", no_oversample,
                  "custom: send only the file's prompts when it has fewer than --num-prompts");
  serve->add_option("--sonnet-input-len", o.sonnet_input_len, "sonnet: prompt tokens, at most")->capture_default_str();
  serve->add_option("--sonnet-output-len", o.sonnet_output_len, "sonnet: max_tokens of every request")
      ->capture_default_str();
  serve->add_option("--sonnet-prefix-len", o.sonnet_prefix_len, "sonnet: tokens of the lines every prompt shares")
      ->capture_default_str();
  serve->add_option("--random-input-len", o.random_input_len, "Random: mean prompt length in tokens")
      ->capture_default_str();
  serve->add_option("--random-output-len", o.random_output_len, "Random: mean output length in tokens")
      ->capture_default_str();
  serve
      ->add_option("--random-range-ratio", o.random_range_ratio,
                   "Random: lengths are uniform in [L(1-r), L(1+r)], r in [0, 1)")
      ->capture_default_str();
  serve
      ->add_option("--prefix-repetition-prefix-len", o.prefix_repetition_prefix_len,
                   "prefix_repetition: tokens of each shared prefix")
      ->capture_default_str();
  serve
      ->add_option("--prefix-repetition-suffix-len", o.prefix_repetition_suffix_len,
                   "prefix_repetition: tokens of each prompt's own suffix")
      ->capture_default_str();
  serve
      ->add_option("--prefix-repetition-num-prefixes", o.prefix_repetition_num_prefixes,
                   "prefix_repetition: distinct prefixes the prompts share")
      ->capture_default_str();
  serve
      ->add_option("--prefix-repetition-output-len", o.prefix_repetition_output_len,
                   "prefix_repetition: output tokens of every request")
      ->capture_default_str();
  serve
      ->add_option("--multi-turn-max-turns", o.multi_turn_max_turns,
                   "sharegpt_multi_turn: user turns per conversation, at most (from its start)")
      ->capture_default_str();
  serve
      ->add_option("--multi-turn-max-context", o.multi_turn_max_context,
                   "sharegpt_multi_turn: a conversation stops before its history + turn + reply (by the dataset's "
                   "lengths) would exceed this many tokens")
      ->capture_default_str();
  serve
      ->add_option("--request-timeout", o.request_timeout_s,
                   "Seconds after which a request counts as failed (vLLM uses 6 h)")
      ->capture_default_str();
  serve
      ->add_option("--metrics-interval", o.metrics_interval_s,
                   "Seconds between samples of the server's Prometheus /metrics; 0 turns sampling off")
      ->capture_default_str();
  serve
      ->add_option("--gpu-energy", o.gpu_energy,
                   "auto: read the energy counters of this machine's NVIDIA GPUs (NVML) before and after the run "
                   "when the server is on this machine, and report joules per request and per output token; off")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  serve->add_option("--label", o.label, "Label stored in the result and used in its file name (default: the backend)");
  serve->add_flag("--disable-progress", o.disable_progress, "No progress bar on stderr");
  serve->add_flag("--disable-tqdm", disable_tqdm, "vLLM's name for --disable-progress");
  add_vllm_bench_flags(*serve, vllm_flags);

  const std::vector<std::string> args = dash_vllm_flag_names(argc, argv);
  std::vector<char*> arg_pointers;
  for (const std::string& a : args) arg_pointers.push_back(const_cast<char*>(a.c_str()));
  if (int code = parse_or_exit_code(app, static_cast<int>(arg_pointers.size()), arg_pointers.data()); code >= 0)
    return code;
  if (Status status = check_vllm_bench_flags(vllm_flags); !status.is_ok()) return report_error("bench", status);

  auto choice = bench::resolve_backend(backend, endpoint);
  if (!choice) return report_error("bench", choice.status());
  o.backend = choice->backend;
  o.endpoint = choice->endpoint;
  o.base_url = bench::server_base_url(base_url, host, port);
  auto rate = parse_rate(request_rate_text, "--request-rate");
  if (!rate) return report_error("bench", rate.status());
  o.request_rate = *rate;
  auto burstiness = parse_rate(burstiness_text, "--burstiness");
  if (!burstiness) return report_error("bench", burstiness.status());
  o.burstiness = *burstiness;
  o.temperature = temperature;
  o.max_concurrency = max_concurrency;
  o.disable_progress = o.disable_progress || disable_tqdm;
  o.no_oversample = no_oversample;
  // vLLM's general lengths map onto each dataset's own flag.
  if (input_len) o.random_input_len = *input_len;
  if (output_len) {
    o.random_output_len = *output_len;
    sharegpt_output_len = *output_len;
    custom_output_len = *output_len;
    o.prefix_repetition_output_len = *output_len;
  }
  o.sharegpt_output_len = sharegpt_output_len;
  if (custom_output_len) o.custom_output_len = *custom_output_len;
  auto headers = bench::parse_key_values(header_items, "--header");
  if (!headers) return report_error("bench", headers.status());
  o.headers = *headers;
  auto metadata = bench::parse_key_values(metadata_items, "--metadata");
  if (!metadata) return report_error("bench", metadata.status());
  o.metadata = *metadata;
  if (!o.extra_body_json.empty()) {
    if (auto extra = bench::parse_extra_body(o.extra_body_json); !extra) return report_error("bench", extra.status());
  }
  auto metrics = bench::parse_percentile_metrics(percentile_metrics_text);
  if (!metrics) return report_error("bench", metrics.status());
  o.percentile_metrics = *metrics;
  auto percentiles = bench::parse_percentiles(metric_percentiles_text);
  if (!percentiles) return report_error("bench", percentiles.status());
  o.metric_percentiles = *percentiles;
  auto goodput = bench::parse_goodput(goodput_items);
  if (!goodput) return report_error("bench", goodput.status());
  o.goodput = *goodput;
  if (o.model.empty()) {
    // As vLLM: the first model the server lists; its id goes in the requests, its root in the result.
    auto served = bench::first_served_model(o.base_url, bench::request_headers(o));
    if (!served) return report_error("bench", served.status());
    log_info("bench: no --model; the server's first model is {} (root {})", served->id, served->root);
    o.model = served->root;
    if (o.served_model_name.empty()) o.served_model_name = served->id;
  }
  o.tokenizer_dir = pick_tokenizer_dir(o.tokenizer_dir, o.model);
  if (!o.temperature && !o.sampling.temperature && o.extra_body_json.find("\"temperature\"") == std::string::npos)
    log_warning(
        "bench: no --temperature: requests carry none, so the server's default applies (as vLLM's benchmark "
        "does); pass --temperature 0 for greedy decoding");

  // Everything that can be checked is checked before the tokenizer is loaded or load is sent.
  if (Status status = bench::validate_options(o); !status.is_ok()) return report_error("bench", status);
  auto tokenizer = std::filesystem::is_directory(o.tokenizer_dir) ? Tokenizer::from_model_dir(o.tokenizer_dir)
                                                                  : Tokenizer::from_tokenizer_json(o.tokenizer_dir);
  if (!tokenizer) return report_error("bench", tokenizer.status());
  raise_open_file_limit();

  auto result = bench::run_bench_serve(o, **tokenizer);
  if (!result) return report_error("bench", result.status());
  std::fputs(bench::format_summary_table(*result).c_str(), stdout);
  std::fflush(stdout);
  if (!o.result_file.empty()) {
    if (Status status = bench::write_result_file(*result, o.result_file); !status.is_ok()) {
      return report_error("bench", status);
    }
    log_info("bench: result written to {}", o.result_file);
  }
  if (o.save_result || o.append_result) {
    auto path = bench::save_vllm_result(o, *result);
    if (!path) return report_error("bench", path.status());
    log_info("bench: result {} {}", o.append_result ? "appended to" : "written to", *path);
  }
  return result->metrics.completed > 0 ? 0 : 1;
}

}  // namespace crosspoint::cli
