// Option checks that must fail before any load is sent.
#include <gtest/gtest.h>

#include "bench/bench_options.h"
#include "bench_test_util.h"

namespace crosspoint::bench {
namespace {

BenchOptions valid_options() {
  BenchOptions o;
  o.model = "m";
  o.dataset_name = "random";
  o.request_rate = 5;
  o.request_rate_given = true;
  o.result_file = "/tmp/r.json";
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
  o.request_rate_given = false;
  o.max_concurrency = 4;  // concurrency alone is a closed loop: fine
  EXPECT_TRUE(validate_options(o).is_ok());
}

TEST(BenchOptions, NeitherRateNorConcurrencyIsAmbiguous) {
  BenchOptions o = valid_options();
  o.request_rate_given = false;
  expect_error(o, "--request-rate R and/or --max-concurrency");
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
  o.dataset_name = "sonnet";
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
