// run_load against tests/bench/fake_openai_server.py in each of its failure modes: every
// request ends up completed or failed with a reason, timings are ordered, the concurrency
// limit holds. Exercises the libcurl event loop directly (so it also runs under ASan
// without the whole CLI).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/load_client.h"

namespace crosspoint::bench {
namespace {

// The fake server as a child process; port read from its "PORT n" line.
class FakeServerProcess {
 public:
  explicit FakeServerProcess(const std::string& args) {
    const std::string script = std::string(CROSSPOINT_SOURCE_DIR) + "/tests/bench/fake_openai_server.py";
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      const std::string command = "exec python3 " + script + " " + args;
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    std::FILE* stream = fdopen(out[0], "r");
    char line[64] = {0};
    if (stream && std::fgets(line, sizeof(line), stream) && std::sscanf(line, "PORT %d", &port_) == 1) {
      url_ = "http://127.0.0.1:" + std::to_string(port_);
    }
    if (stream) std::fclose(stream);
  }
  ~FakeServerProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& url() const { return url_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string url_;
};

// 1,000 sockets need more than the usual soft limit of 1,024 descriptors.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

std::vector<RequestRecord> run(const std::string& url, int num_requests, std::optional<int> max_concurrency,
                               LoadRunResult* out = nullptr, double timeout_s = 30) {
  raise_open_file_limit();
  LoadClientConfig config;
  config.url = url + "/v1/completions";
  config.max_concurrency = max_concurrency;
  config.request_timeout_s = timeout_s;
  config.metrics_url = url + "/metrics";
  config.metrics_interval_s = 0.01;
  std::vector<std::string> bodies(num_requests, R"({"model":"fake","prompt":"a b c","max_tokens":5,"stream":true})");
  std::vector<RequestRecord> records(num_requests);
  for (int i = 0; i < num_requests; ++i) records[i].request_idx = i;
  auto result = run_load(config, bodies, std::vector<double>(num_requests, 0.0), records);
  EXPECT_TRUE(result.is_ok());
  if (out && result.is_ok()) *out = *result;
  return records;
}

TEST(LoadClient, StreamsCompleteWithOrderedTimings) {
  FakeServerProcess server("--token-delay-ms 1");
  ASSERT_FALSE(server.url().empty()) << "fake server did not start (python3 missing?)";
  LoadRunResult load;
  const auto records = run(server.url(), 12, 3, &load);
  for (const auto& r : records) {
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.http_status, 200);
    EXPECT_EQ(r.usage_completion_tokens, 5);
    EXPECT_EQ(r.prompt_len, 3);  // from usage.prompt_tokens
    EXPECT_EQ(r.itl_s.size(), 4u);
    EXPECT_GT(r.ttft_s, 0);
    EXPECT_GE(r.latency_s, r.ttft_s);
    EXPECT_GE(r.start_s, r.arrival_s);
    EXPECT_EQ(r.generated_text, " t0 t1 t2 t3 t4");
  }
  EXPECT_EQ(load.max_in_flight, 3);
  EXPECT_GT(load.duration_s, 0);
  EXPECT_FALSE(load.server_samples.empty());
  EXPECT_GT(load.overhead.num_chunks, 0);
}

// Two conversations of three turns, as the multi-turn workload sends them: the fake server
// counts every message's words as prompt tokens, so a turn's usage shows the history it resent.
struct ChainedRun {
  std::vector<RequestRecord> records;
  std::vector<size_t> made;  // requests whose body was made at release, in release order
  LoadRunResult load;
};

ChainedRun run_two_conversations(const std::string& url) {
  ChainedRun run;
  LoadClientConfig config;
  config.url = url + "/v1/chat/completions";
  config.max_concurrency = 2;
  config.request_timeout_s = 30;
  config.follows = {-1, 0, 1, -1, 3, 4};
  run.records.resize(6);
  for (int i = 0; i < 6; ++i) run.records[i].request_idx = i;
  auto body_with = [](const std::vector<std::string>& contents) {
    nlohmann::json messages = nlohmann::json::array();
    for (size_t k = 0; k < contents.size(); ++k)
      messages.push_back({{"role", k % 2 == 0 ? "user" : "assistant"}, {"content", contents[k]}});
    return nlohmann::json({{"model", "fake"}, {"messages", messages}, {"max_tokens", 5}, {"stream", true}}).dump();
  };
  config.make_body = [&](size_t idx) {
    run.made.push_back(idx);
    std::vector<std::string> contents;
    for (size_t i = idx - idx % 3; i < idx; ++i) {
      contents.push_back("u v");
      contents.push_back(run.records[i].generated_text);
    }
    contents.push_back("u v");
    return body_with(contents);
  };
  const std::vector<std::string> bodies = {body_with({"u v"}), "", "", body_with({"u v"}), "", ""};
  auto result = run_load(config, bodies, std::vector<double>(6, 0.0), run.records);
  EXPECT_TRUE(result.is_ok());
  if (result.is_ok()) run.load = *result;
  return run;
}

TEST(LoadClient, ChainedTurnsWaitForTheirPredecessorAndResendTheAnswers) {
  FakeServerProcess server("--token-delay-ms 1");
  ASSERT_FALSE(server.url().empty());
  ChainedRun run = run_two_conversations(server.url());
  for (const auto& r : run.records) ASSERT_TRUE(r.success) << r.request_idx << ": " << r.error;
  std::sort(run.made.begin(), run.made.end());
  EXPECT_EQ(run.made, (std::vector<size_t>{1, 2, 4, 5}));
  for (int first : {0, 3}) {
    EXPECT_EQ(run.records[first].prompt_len, 2);
    // Each later turn starts after the previous one finished and carries its 5-word answer.
    for (int k = 1; k < 3; ++k) {
      const RequestRecord& previous = run.records[first + k - 1];
      EXPECT_GE(run.records[first + k].start_s, previous.start_s + previous.latency_s);
      EXPECT_EQ(run.records[first + k].prompt_len, 2 + k * (5 + 2));
    }
  }
  EXPECT_EQ(run.load.max_in_flight, 2);
}

TEST(LoadClient, AFailedTurnFailsTheRestOfItsConversationUnsent) {
  FakeServerProcess server("--mode http500");
  ASSERT_FALSE(server.url().empty());
  const ChainedRun run = run_two_conversations(server.url());
  EXPECT_TRUE(run.made.empty());
  for (int first : {0, 3}) {
    EXPECT_EQ(run.records[first].http_status, 500);
    for (int k = 1; k < 3; ++k) {
      const RequestRecord& r = run.records[first + k];
      EXPECT_FALSE(r.success);
      EXPECT_EQ(r.http_status, 0);
      EXPECT_NE(r.error.find("previous turn of its conversation failed"), std::string::npos) << r.error;
    }
  }
}

TEST(LoadClient, ThousandConcurrentStreams) {
  // The server holds every stream until all 1,000 are open, then sends them instantly.
  FakeServerProcess server("--barrier 1000");
  ASSERT_FALSE(server.url().empty());
  LoadRunResult load;
  const auto records = run(server.url(), 1000, std::nullopt, &load, 120);
  int num_ok = 0;
  for (const auto& r : records) num_ok += r.success ? 1 : 0;
  EXPECT_EQ(num_ok, 1000) << records[0].error;
  EXPECT_EQ(load.max_in_flight, 1000);
}

TEST(LoadClient, EveryFailureModeIsAFailedRecordWithAReason) {
  const std::pair<const char*, const char*> modes[] = {
      {"http500", "HTTP 500 Internal Server Error"},
      {"truncate", "partial"},
      {"malformed", "malformed stream chunk"},
      {"stream-error", "server error in stream"},
  };
  for (const auto& [mode, needle] : modes) {
    FakeServerProcess server(std::string("--mode ") + mode + " --fail-every 2");
    ASSERT_FALSE(server.url().empty());
    const auto records = run(server.url(), 6, 1);
    int num_failed = 0;
    for (const auto& r : records) {
      if (r.success) continue;
      ++num_failed;
      EXPECT_NE(r.error.find(needle), std::string::npos) << mode << ": " << r.error;
    }
    EXPECT_EQ(num_failed, 3) << mode;
  }
}

TEST(LoadClient, TimeoutAndRefusedConnection) {
  {
    FakeServerProcess server("--mode slow --slow-delay-s 5");
    ASSERT_FALSE(server.url().empty());
    for (const auto& r : run(server.url(), 2, 2, nullptr, 0.3)) {
      EXPECT_FALSE(r.success);
      EXPECT_NE(r.error.find("Timeout"), std::string::npos) << r.error;
    }
  }
  // Port 9 (discard) on loopback: nothing listens there in a test environment.
  for (const auto& r : run("http://127.0.0.1:9", 3, std::nullopt)) {
    EXPECT_FALSE(r.success);
    EXPECT_EQ(r.http_status, 0);
    EXPECT_FALSE(r.error.empty());
  }
}

}  // namespace
}  // namespace crosspoint::bench

namespace crosspoint::bench {
namespace {

TEST(RequestUuid, VersionFourShapeDistinctPerRequestAndRun) {
  const std::regex uuid("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (uint64_t key : {1ull, 2ull, 0xDEADBEEFull}) {
    for (size_t i = 0; i < 2000; ++i) {
      const std::string id = request_uuid(key, i);
      EXPECT_TRUE(std::regex_match(id, uuid)) << id;
      EXPECT_TRUE(seen.insert(id).second) << "repeated " << id;
    }
  }
  EXPECT_EQ(request_uuid(7, 3), request_uuid(7, 3));
}

}  // namespace
}  // namespace crosspoint::bench
