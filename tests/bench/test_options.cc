// Option checks that must fail before any load is sent.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "bench/bench_options.h"
#include "bench_test_util.h"

namespace crosspoint::bench {
namespace {

BenchOptions valid_options() {
  BenchOptions o;
  o.model = "m";
  o.dataset_name = "random";
  o.request_rate = 5;
  o.tokenizer_dir = testing::fixture_path("tiny_tokenizer");
  return o;
}

void expect_error(const BenchOptions& o, const std::string& needle) {
  Status status = validate_options(o);
  ASSERT_FALSE(status.is_ok()) << "expected an error mentioning " << needle;
  EXPECT_NE(status.message().find(needle), std::string::npos) << status.to_string();
}

TEST(BenchOptions, ValidOptionsPass) {
  EXPECT_TRUE(validate_options(valid_options()).is_ok());
  BenchOptions o = valid_options();
  o.request_rate = std::numeric_limits<double>::infinity();
  o.max_concurrency = 4;  // concurrency alone is a closed loop: fine
  EXPECT_TRUE(validate_options(o).is_ok());
}

// As vLLM: no rate and no concurrency is an infinite rate (every request at t = 0), no result
// file is needed, and the defaults are vLLM's (random dataset, 1,000 prompts).
TEST(BenchOptions, VllmDefaults) {
  BenchOptions o;
  EXPECT_EQ(o.dataset_name, "random");
  EXPECT_EQ(o.num_prompts, 1000);
  EXPECT_TRUE(std::isinf(o.request_rate));
  EXPECT_FALSE(o.max_concurrency.has_value());
  EXPECT_EQ(o.backend, "openai");
  EXPECT_EQ(o.base_url, "http://127.0.0.1:8000");
  EXPECT_EQ(o.custom_output_len, 256);
  EXPECT_EQ(o.sonnet_input_len, 550);
  EXPECT_EQ(o.sonnet_output_len, 150);
  EXPECT_EQ(o.sonnet_prefix_len, 200);
  o.model = "m";
  o.tokenizer_dir = testing::fixture_path("tiny_tokenizer");
  EXPECT_TRUE(validate_options(o).is_ok()) << validate_options(o).to_string();
}

TEST(BenchOptions, RampUpChecksAsVllm) {
  BenchOptions o = valid_options();
  o.ramp_up_strategy = "linear";
  o.ramp_up_start_rps = 1;
  o.ramp_up_end_rps = 10;
  expect_error(o, "do not give --request-rate");  // a fixed rate and a ramp-up exclude each other
  o.request_rate = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(validate_options(o).is_ok()) << validate_options(o).to_string();
  o.ramp_up_end_rps.reset();
  expect_error(o, "give both --ramp-up-start-rps and --ramp-up-end-rps");
  o.ramp_up_end_rps = 0;
  expect_error(o, "must not exceed --ramp-up-end-rps");
  o.ramp_up_start_rps = 0;
  expect_error(o, "--ramp-up-start-rps: must be > 0");
  o.ramp_up_strategy = "step";
  expect_error(o, "not linear or exponential");
  o = valid_options();
  o.ramp_up_end_rps = 5;
  expect_error(o, "need --ramp-up-strategy");
}

TEST(BenchOptions, DatasetFilesAndNames) {
  BenchOptions o = valid_options();
  o.dataset_path = testing::fixture_path("custom_prompts.jsonl");
  expect_error(o, "reads no file");  // random with a file, as vLLM refuses it
  for (const char* name : {"custom", "sonnet", "burstgpt"}) {
    o = valid_options();
    o.dataset_name = name;
    expect_error(o, "--dataset-path");
    o.dataset_path = "/nonexistent/file";
    expect_error(o, "/nonexistent/file");
  }
  o = valid_options();
  o.dataset_name = "hf";
  expect_error(o, "--dataset-name hf: crosspoint bench serve has no such dataset");
  o = valid_options();
  o.disable_shuffle = true;
  expect_error(o, "--disable-shuffle");
  o = valid_options();
  o.extra_body_json = "[1, 2]";
  expect_error(o, "--extra-body");
}

TEST(BenchOptions, BadValues) {
  BenchOptions o = valid_options();
  o.endpoint = "/v1/embeddings";
  expect_error(o, "--endpoint");
  o = valid_options();
  o.base_url = "localhost:8000";
  expect_error(o, "--base-url");
  o = valid_options();
  o.random_range_ratio = 1.0;
  expect_error(o, "--random-range-ratio");
  o = valid_options();
  o.max_concurrency = 0;
  expect_error(o, "--max-concurrency");
  o = valid_options();
  o.dataset_name = "alpaca";
  expect_error(o, "--dataset-name");
  o = valid_options();
  o.tokenizer_dir = "";
  expect_error(o, "--tokenizer");
}

TEST(BenchOptions, MissingShareGptFileIsNamed) {
  BenchOptions o = valid_options();
  o.dataset_name = "sharegpt";
  o.dataset_path = "/nonexistent/ShareGPT.json";
  expect_error(o, "/nonexistent/ShareGPT.json");
}

TEST(BenchOptions, GoodputParsing) {
  auto slos = parse_goodput({"ttft:500", "tpot:50,e2el:10000"});
  ASSERT_TRUE(slos.is_ok());
  EXPECT_EQ(*slos->ttft_ms, 500);
  EXPECT_EQ(*slos->tpot_ms, 50);
  EXPECT_EQ(*slos->e2el_ms, 10000);
  EXPECT_FALSE(parse_goodput({}).value().any());
  EXPECT_FALSE(parse_goodput({"ttft=5"}).is_ok());
  EXPECT_FALSE(parse_goodput({"itl:5"}).is_ok());
  EXPECT_FALSE(parse_goodput({"ttft:-1"}).is_ok());
  EXPECT_FALSE(parse_goodput({"ttft:abc"}).is_ok());
}

TEST(BenchOptions, PercentilesAndMetrics) {
  EXPECT_EQ(parse_percentiles("50,90,99.9").value(), (std::vector<double>{50, 90, 99.9}));
  EXPECT_FALSE(parse_percentiles("0").is_ok());
  EXPECT_FALSE(parse_percentiles("101").is_ok());
  EXPECT_FALSE(parse_percentiles("").is_ok());
  EXPECT_EQ(parse_percentile_metrics("ttft,e2el").value(), (std::vector<std::string>{"ttft", "e2el"}));
  EXPECT_FALSE(parse_percentile_metrics("ttft,latency").is_ok());
}

}  // namespace
}  // namespace crosspoint::bench
