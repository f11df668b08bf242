// vLLM's own bench serve flags: backend and endpoint, the server URL, KEY=VALUE lists, the
// extra body and sampling flags in the request body, the result file name, the ramp-up.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/arrivals.h"
#include "bench/request_body.h"
#include "bench/served_models.h"
#include "bench/pytorch_benchmark_format.h"
#include "bench/vllm_bench_flags.h"

namespace crosspoint::bench {
namespace {

TEST(VllmBenchFlags, BackendAndEndpoint) {
  auto c = resolve_backend(std::nullopt, std::nullopt);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->backend, "openai");
  EXPECT_EQ(c->endpoint, "/v1/completions");
  c = resolve_backend("vllm", std::nullopt);
  EXPECT_EQ(c->backend, "vllm");
  EXPECT_EQ(c->endpoint, "/v1/completions");
  c = resolve_backend("openai-chat", std::nullopt);
  EXPECT_EQ(c->endpoint, "/v1/chat/completions");
  c = resolve_backend(std::nullopt, std::string("/v1/chat/completions"));  // crosspoint's older lines
  EXPECT_EQ(c->backend, "openai-chat");
  c = resolve_backend("openai-chat", std::string("/v1/chat/completions"));
  EXPECT_TRUE(c.is_ok());
  EXPECT_FALSE(resolve_backend("openai-chat", std::string("/v1/completions")).is_ok());
  EXPECT_FALSE(resolve_backend("vllm", std::string("/v1/chat/completions")).is_ok());
  const auto audio = resolve_backend("openai-audio", std::nullopt);
  ASSERT_FALSE(audio.is_ok());
  EXPECT_NE(audio.status().message().find("--backend openai-audio"), std::string::npos);
  EXPECT_FALSE(resolve_backend(std::nullopt, std::string("/v1/embeddings")).is_ok());
}

TEST(VllmBenchFlags, ServerUrl) {
  EXPECT_EQ(server_base_url("", "127.0.0.1", 8000), "http://127.0.0.1:8000");
  EXPECT_EQ(server_base_url("", "::1", 9001), "http://[::1]:9001");
  EXPECT_EQ(server_base_url("http://h:1/", "127.0.0.1", 8000), "http://h:1");  // --base-url wins
}

TEST(VllmBenchFlags, KeyValues) {
  auto pairs = parse_key_values({"version=0.3.3", " tp = 1 ", "expr=a=b"}, "--metadata");
  ASSERT_TRUE(pairs.is_ok());
  ASSERT_EQ(pairs->size(), 3u);
  EXPECT_EQ((*pairs)[0], (std::pair<std::string, std::string>{"version", "0.3.3"}));
  EXPECT_EQ((*pairs)[1], (std::pair<std::string, std::string>{"tp", "1"}));
  EXPECT_EQ((*pairs)[2], (std::pair<std::string, std::string>{"expr", "a=b"}));
  const auto bad = parse_key_values({"novalue"}, "--header");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("--header: 'novalue'"), std::string::npos);
  EXPECT_TRUE(parse_extra_body(R"({"a": {"b": 1}})").is_ok());
  EXPECT_FALSE(parse_extra_body("[1]").is_ok());
  EXPECT_FALSE(parse_extra_body("{a").is_ok());
}

TEST(VllmBenchFlags, PythonFloatText) {
  EXPECT_EQ(python_float_text(10), "10.0");
  EXPECT_EQ(python_float_text(0.5), "0.5");
  EXPECT_EQ(python_float_text(2.25), "2.25");
  EXPECT_EQ(python_float_text(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(python_float_text(1e-5), "1e-05");
  EXPECT_EQ(python_float_text(0.00025), "0.00025");
  EXPECT_EQ(python_float_text(1e16), "1e+16");
  EXPECT_EQ(python_float_text(123456.0), "123456.0");
  EXPECT_EQ(python_float_text(0.1), "0.1");
}

// vLLM's compute_result_filename, case by case.
TEST(VllmBenchFlags, DefaultResultFileName) {
  ResultNameInputs in;
  in.backend = "vllm";
  in.request_rate = std::numeric_limits<double>::infinity();
  in.model_id = "meta-llama/Llama-3.1-8B-Instruct";
  in.date = "20250102-030405";
  EXPECT_EQ(default_result_filename(in), "vllm-infqps-Llama-3.1-8B-Instruct-20250102-030405.json");
  in.max_concurrency = 1;
  in.request_rate = 4;
  EXPECT_EQ(default_result_filename(in), "vllm-4.0qps-concurrency1-Llama-3.1-8B-Instruct-20250102-030405.json");
  in.label = "mine";
  in.ramp_up_strategy = "linear";
  in.ramp_up_start_rps = 1;
  in.ramp_up_end_rps = 20;
  EXPECT_EQ(default_result_filename(in),
            "mine-ramp-up-linear-1qps-20qps-concurrency1-Llama-3.1-8B-Instruct-20250102-030405.json");
  EXPECT_EQ(result_path("./log/", "", in),
            "./log/mine-ramp-up-linear-1qps-20qps-concurrency1-Llama-3.1-8B-Instruct-20250102-030405.json");
  EXPECT_EQ(result_path("out", "x.json", in), "out/x.json");
  EXPECT_EQ(result_path("", "x.json", in), "x.json");
}

// The sampling flags that were given, then --extra-body, land in the body as vLLM merges them;
// nothing that was not given is sent.
// Python's os.path.splitext decides where ".pytorch.json" goes: the last dot of the last path
// component, unless only dots lead up to it.
TEST(VllmBenchFlags, PytorchBenchmarkFileBesideTheResult) {
  EXPECT_EQ(pytorch_benchmark_path("openai-infqps-m-20261205-101010.json"),
            "openai-infqps-m-20261205-101010.pytorch.json");
  EXPECT_EQ(pytorch_benchmark_path("dir/run.jsonl"), "dir/run.pytorch.json");
  EXPECT_EQ(pytorch_benchmark_path("dir.v2/run"), "dir.v2/run.pytorch.json");
  EXPECT_EQ(pytorch_benchmark_path(".hidden"), ".hidden.pytorch.json");
  EXPECT_EQ(pytorch_benchmark_path("a/..b.json"), "a/..b.pytorch.json");
  EXPECT_EQ(pytorch_benchmark_path("a.b.json"), "a.b.pytorch.json");
}

// No headline metric (every request failed): no records, so no file, as vLLM.
TEST(VllmBenchFlags, PytorchBenchmarkRecordsOnlyForHeadlineMetrics) {
  BenchOptions o;
  o.model = "m";
  nlohmann::ordered_json result = {{"model_id", "m"}, {"completed", 0}, {"errors", {"refused"}}};
  EXPECT_TRUE(pytorch_benchmark_records(o, result).empty());
  result["p99_itl_ms"] = 4.5;
  result["ttfts"] = {1.0, 2.0};
  const nlohmann::ordered_json records = pytorch_benchmark_records(o, result);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["metric"]["name"], "p99_itl_ms");
  EXPECT_EQ(records[0]["metric"]["benchmark_values"], nlohmann::ordered_json::array({4.5}));
  EXPECT_EQ(records[0]["metric"]["extra_info"], (nlohmann::ordered_json{{"model_id", "m"}, {"completed", 0}}));
  EXPECT_EQ(records[0]["benchmark"]["extra_info"]["args"]["request_rate"], "inf");
}

TEST(VllmBenchFlags, SamplingFlagsAndExtraBodyInTheRequest) {
  RequestBodyOptions options;
  options.endpoint = "/v1/completions";
  options.model = "m";
  options.ignore_eos = true;
  options.extra_body = sampling_extra_body(
      0.9, 10, std::nullopt, 0.5, std::nullopt, 0.25, 1.1,
      nlohmann::ordered_json::parse(R"({"top_k": 3, "chat_template_kwargs": {"enable_thinking": false}})"));
  SampleRequest sample;
  sample.prompt = "p";
  sample.expected_output_len = 4;
  EXPECT_EQ(build_request_body(options, sample),
            R"({"model":"m","prompt":"p","repetition_penalty":1.1,"max_tokens":4,"stream":true,)"
            R"("stream_options":{"include_usage":true},"ignore_eos":true,"top_p":0.9,"top_k":3,"temperature":0.5,)"
            R"("presence_penalty":0.25,"chat_template_kwargs":{"enable_thinking":false}})");
  options.endpoint = "/v1/chat/completions";
  options.extra_body = sampling_extra_body(std::nullopt, std::nullopt, 0.05, std::nullopt, 0.5, std::nullopt,
                                           std::nullopt, nlohmann::ordered_json::object());
  options.ignore_eos = false;
  EXPECT_EQ(build_request_body(options, sample),
            R"({"model":"m","messages":[{"role":"user","content":"p"}],"max_completion_tokens":4,"max_tokens":4,)"
            R"("stream":true,"stream_options":{"include_usage":true},"min_p":0.05,"frequency_penalty":0.5})");
  options.logprobs = 2;  // completions only
  options.endpoint = "/v1/completions";
  options.extra_body = nlohmann::ordered_json::object();
  EXPECT_EQ(nlohmann::json::parse(build_request_body(options, sample))["logprobs"], 2);
}

TEST(VllmRampUp, RateFormulas) {
  EXPECT_DOUBLE_EQ(ramp_up_rate("linear", 1, 11, 0, 11), 1);
  EXPECT_DOUBLE_EQ(ramp_up_rate("linear", 1, 11, 5, 11), 6);
  EXPECT_DOUBLE_EQ(ramp_up_rate("linear", 1, 11, 10, 11), 11);
  EXPECT_DOUBLE_EQ(ramp_up_rate("exponential", 1, 16, 0, 5), 1);
  EXPECT_DOUBLE_EQ(ramp_up_rate("exponential", 1, 16, 2, 5), 4);
  EXPECT_DOUBLE_EQ(ramp_up_rate("exponential", 1, 16, 4, 5), 16);
  EXPECT_DOUBLE_EQ(ramp_up_rate("linear", 3, 9, 0, 1), 3);  // one request: progress 0
}

// Burstiness inf: each gap is exactly 1 / r_i and the sum is not rescaled.
TEST(VllmRampUp, ConstantGapsFollowTheRate) {
  const auto times = ramp_up_arrival_times_s(5, "linear", 2, 10, std::numeric_limits<double>::infinity(), 0);
  const double expected[] = {1.0 / 2, 1.0 / 2 + 1.0 / 4, 1.0 / 2 + 1.0 / 4 + 1.0 / 6,
                             1.0 / 2 + 1.0 / 4 + 1.0 / 6 + 1.0 / 8, 1.0 / 2 + 1.0 / 4 + 1.0 / 6 + 1.0 / 8 + 1.0 / 10};
  ASSERT_EQ(times.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(times[i], expected[i], 1e-12) << i;
}

// Poisson gaps: the mean gap of each stretch of the run is 1 / (its rate), so the arrivals
// speed up as the rate ramps.
TEST(VllmRampUp, PoissonGapsSpeedUp) {
  const int n = 20000;
  for (const char* strategy : {"linear", "exponential"}) {
    const auto times = ramp_up_arrival_times_s(n, strategy, 10, 1000, 1.0, 3);
    for (int begin : {0, n / 2, n - n / 10}) {
      const int end = begin + n / 10;
      double expected = 0;
      for (int i = begin + 1; i < end; ++i) expected += 1.0 / ramp_up_rate(strategy, 10, 1000, i, n);
      const double got = times[end - 1] - times[begin];
      EXPECT_NEAR(got / expected, 1.0, 0.05) << strategy << " requests " << begin << ".." << end;
    }
    for (int i = 1; i < n; ++i) ASSERT_GE(times[i], times[i - 1]);
  }
}

TEST(VllmBenchFlags, FirstServedModel) {
  auto m = parse_first_model(R"({"object":"list","data":[{"id":"served","root":"org/model"},{"id":"b"}]})");
  ASSERT_TRUE(m.is_ok());
  EXPECT_EQ(m->id, "served");
  EXPECT_EQ(m->root, "org/model");
  EXPECT_EQ(parse_first_model(R"({"data":[{"id":"only"}]})")->root, "only");
  EXPECT_FALSE(parse_first_model(R"({"data":[]})").is_ok());
  EXPECT_FALSE(parse_first_model("nope").is_ok());
}

}  // namespace
}  // namespace crosspoint::bench
