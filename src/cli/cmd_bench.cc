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
      "Send a dataset of streamed requests to --base-url, measure TTFT/TPOT/ITL/E2EL, throughput and goodput "
      "exactly as `vllm bench serve` does, print vLLM's summary table and write a result JSON with vLLM's keys "
      "plus per-request records, client overhead and the server's /metrics.");
  bench::BenchOptions o;
  std::string request_rate_text = "inf", burstiness_text = "1.0";
  std::string percentile_metrics_text = "ttft,tpot,itl", metric_percentiles_text = "99";
  std::vector<std::string> goodput_items;
  std::optional<double> temperature;
  std::optional<int> max_concurrency, sharegpt_output_len;

  serve->add_option("--base-url", o.base_url, "Server root URL, e.g. http://127.0.0.1:8000 (no path)")->required();
  serve
      ->add_option("--endpoint", o.endpoint,
                   "API route: /v1/completions (raw prompt) or /v1/chat/completions (prompt as one user message)")
      ->capture_default_str();
  serve->add_option("--model", o.model, "Model name put in every request's \"model\" field")->required();
  serve->add_option("--tokenizer", o.tokenizer_dir,
                    "Hugging Face model directory with tokenizer.json (or the file itself), for prompt lengths and for "
                    "counting output "
                    "tokens when the server sends no usage (default: --model if it is a directory, else the "
                    "default model)");
  serve
      ->add_option("--dataset-name", o.dataset_name,
                   "sharegpt (real conversations, vLLM's sampling rules), sharegpt_multi_turn (ShareGPT "
                   "conversations turn by turn on /v1/chat/completions, each turn resending the history with the "
                   "server's own answers), random (token runs of set lengths) or prefix_repetition (prompts sharing "
                   "a few prefixes: what prefix caching saves)")
      ->capture_default_str();
  serve->add_option("--dataset-path", o.dataset_path,
                    "ShareGPT JSON file (default: the copy scripts/setup.sh puts in the cache)");
  serve
      ->add_option("--num-prompts", o.num_prompts,
                   "Number of requests to send (sharegpt_multi_turn: number of conversations)")
      ->capture_default_str();
  serve->add_option("--max-concurrency", max_concurrency,
                    "Most requests in flight at once; the rest wait in arrival order (default: no limit)");
  serve->add_option("--request-rate", request_rate_text,
                    "Mean arrivals per second (gamma/Poisson process), or inf to release all at t = 0. Give this "
                    "and/or --max-concurrency");
  serve
      ->add_option("--burstiness", burstiness_text,
                   "Gamma shape of the inter-arrival gaps: 1 = Poisson, < 1 burstier, > 1 smoother, inf = "
                   "constant gaps")
      ->capture_default_str();
  serve->add_option("--seed", o.seed, "Seed of the dataset sample and the arrival times")->capture_default_str();
  serve->add_option("--temperature", temperature,
                    "Sampling temperature sent with every request (default: not sent, so the server's default "
                    "applies); 0 = greedy");
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
  serve->add_option("--result-file", o.result_file, "Where to write the result JSON")->required();
  serve->add_option("--sharegpt-output-len", sharegpt_output_len,
                    "ShareGPT: fixed output length instead of the length of the dataset's reply");
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
  serve->add_option("--label", o.label, "Label stored in the result (default: the endpoint type)");
  serve->add_flag("--disable-progress", o.disable_progress, "No progress bar on stderr");

  if (int code = parse_or_exit_code(app, argc, argv); code >= 0) return code;

  auto rate = parse_rate(request_rate_text, "--request-rate");
  if (!rate) return report_error("bench", rate.status());
  o.request_rate = *rate;
  o.request_rate_given = serve->count("--request-rate") > 0;
  auto burstiness = parse_rate(burstiness_text, "--burstiness");
  if (!burstiness) return report_error("bench", burstiness.status());
  o.burstiness = *burstiness;
  o.temperature = temperature;
  o.max_concurrency = max_concurrency;
  o.sharegpt_output_len = sharegpt_output_len;
  auto metrics = bench::parse_percentile_metrics(percentile_metrics_text);
  if (!metrics) return report_error("bench", metrics.status());
  o.percentile_metrics = *metrics;
  auto percentiles = bench::parse_percentiles(metric_percentiles_text);
  if (!percentiles) return report_error("bench", percentiles.status());
  o.metric_percentiles = *percentiles;
  auto goodput = bench::parse_goodput(goodput_items);
  if (!goodput) return report_error("bench", goodput.status());
  o.goodput = *goodput;
  o.tokenizer_dir = pick_tokenizer_dir(o.tokenizer_dir, o.model);

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
  if (Status status = bench::write_result_file(*result, o.result_file); !status.is_ok()) {
    return report_error("bench", status);
  }
  log_info("bench: result written to {}", o.result_file);
  return result->metrics.completed > 0 ? 0 : 1;
}

}  // namespace crosspoint::cli
