// The start-up lines of `crosspoint serve` (format of src/cli/cmd_serve.cc, with the log
// prefix) read back into numbers, and the JSON round trip the sweep stores them in.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sweep/startup_log.h"

namespace crosspoint::sweep {
namespace {

const char* kLog =
    "INFO 11-29 23:10:01 model /c/models/SmolLM2 (f16): weights 0.251 GiB, loaded in 0.02 s\n"
    "INFO 11-29 23:10:01 KV cache: 1.000 GiB (f32) = 23296 tokens in 1456 blocks of 16\n"
    "INFO 11-29 23:10:01 Maximum concurrency for 8192 tokens per request (worst case: every request at "
    "max-model-len): 2.84x\n"
    "INFO 11-29 23:10:01 Workload-based capacity at 438 tokens per request (--mean-tokens-per-request; ShareGPT "
    "mean 438): ~53 concurrent requests (blocks are allocated as tokens arrive, not max-model-len up front)\n"
    "INFO 11-29 23:10:01 engine: max-num-seqs 256, max-num-batched-tokens 2048, max-model-len 8192, max-waiting "
    "1024, 2 threads\n"
    "INFO 11-29 23:10:01 start-up took 5.73 s (load 0.02 s); serving 'sweep' on http://127.0.0.1:40123/v1\n";

TEST(StartupLog, ParsesEveryLine) {
  const ServerStartup s = parse_server_startup(kLog);
  EXPECT_DOUBLE_EQ(*s.weights_gib, 0.251);
  EXPECT_DOUBLE_EQ(*s.load_s, 0.02);
  EXPECT_DOUBLE_EQ(*s.kv_cache_gib, 1.0);
  EXPECT_DOUBLE_EQ(*s.kv_cache_tokens, 23296);
  EXPECT_DOUBLE_EQ(*s.worst_case_concurrency, 2.84);
  EXPECT_DOUBLE_EQ(*s.workload_concurrency, 53);
  EXPECT_DOUBLE_EQ(*s.max_model_len, 8192);
  EXPECT_DOUBLE_EQ(*s.startup_s, 5.73);
  EXPECT_EQ(s.base_url, "http://127.0.0.1:40123");
  EXPECT_NE(s.capacity_lines.find("Maximum concurrency"), std::string::npos);
}

TEST(StartupLog, PartialLogHasNoAddressYet) {
  const std::string text(kLog);
  const ServerStartup s = parse_server_startup(text.substr(0, text.find("INFO 11-29 23:10:01 engine")));
  EXPECT_TRUE(s.base_url.empty());
  EXPECT_FALSE(s.startup_s.has_value());
  EXPECT_DOUBLE_EQ(*s.kv_cache_tokens, 23296);
}

TEST(StartupLog, JsonRoundTrip) {
  const ServerStartup s = parse_server_startup(kLog);
  const ServerStartup back = server_startup_from_json(nlohmann::json::parse(server_startup_to_json(s).dump()));
  EXPECT_EQ(back.kv_cache_tokens, s.kv_cache_tokens);
  EXPECT_EQ(back.startup_s, s.startup_s);
  EXPECT_EQ(back.workload_concurrency, s.workload_concurrency);
  EXPECT_EQ(back.capacity_lines, s.capacity_lines);
  EXPECT_FALSE(server_startup_from_json(nlohmann::json::object()).weights_gib.has_value());
}

// The lines of `crosspoint serve --device cuda` (src/cli/cmd_serve.cc's make_cuda_runner).
TEST(StartupLog, GpuServerCountsDeviceWeightsAndUploadTime) {
  const std::string log =
      "INFO 11-30 02:00:01 model /tmp/ckpt/w4a16 (gptq-int4): weights 5.270 GiB, loaded in 1.50 s\n"
      "INFO 11-30 02:00:09 GPU: NVIDIA H200 (139.8 GiB); weights on the GPU 5.120 GiB (w4a16), converted and "
      "uploaded in 6.25 s\n"
      "INFO 11-30 02:00:10 activations and workspaces for 2048 tokens per step: 0.412 GiB (measured by a profile "
      "step, 0.31 s); 5.600 GiB in use before the KV cache\n"
      "INFO 11-30 02:00:10 KV cache: 119.500 GiB (fp16) = 2236416 tokens in 139776 blocks of 16 "
      "(--gpu-memory-utilization 0.9; 0.25 GiB kept for CUDA graphs, 2241088 tokens with --enforce-eager)\n"
      "INFO 11-30 02:00:12 CUDA graphs: 14 decode batch sizes captured [1, 2, 4] in 1.90 s, 0.020 GiB\n"
      "INFO 11-30 02:00:12 Maximum concurrency for 4096 tokens per request (worst case: every request at "
      "max-model-len): 546.00x\n"
      "INFO 11-30 02:00:12 engine: device cuda, max-num-seqs 256, max-num-batched-tokens 2048, max-model-len 4096, "
      "max-waiting 1024, 16 threads\n"
      "INFO 11-30 02:00:12 start-up took 11.20 s (load 1.50 s); serving 'sweep' on http://127.0.0.1:40999/v1\n";
  const ServerStartup s = parse_server_startup(log);
  EXPECT_DOUBLE_EQ(*s.weights_gib, 5.12);
  EXPECT_DOUBLE_EQ(*s.load_s, 1.5 + 6.25);  // "uploaded in" must not be read as the host's "loaded in"
  EXPECT_DOUBLE_EQ(*s.kv_cache_gib, 119.5);
  EXPECT_DOUBLE_EQ(*s.kv_cache_tokens, 2236416);
  EXPECT_DOUBLE_EQ(*s.worst_case_concurrency, 546);
  EXPECT_DOUBLE_EQ(*s.max_model_len, 4096);
  EXPECT_DOUBLE_EQ(*s.startup_s, 11.2);
  EXPECT_EQ(s.base_url, "http://127.0.0.1:40999");
  for (const char* kept : {"GPU: NVIDIA H200", "CUDA graphs: 14", "activations and workspaces", "--enforce-eager)"}) {
    EXPECT_NE(s.capacity_lines.find(kept), std::string::npos) << kept;
  }
}

// vLLM's and SGLang's own start-up lines (formats from their code: engine_standins/standin_server.py).
TEST(StartupLog, ReadsVllmAndSglangCapacityLines) {
  const ServerStartup vllm = parse_server_startup(
      "INFO 12-05 [gpu_model_runner.py:1] Model loading took 14.9908 GiB memory and 5.123456 seconds\n"
      "INFO 12-05 [gpu_worker.py:2] Available KV cache memory: 112.50 GiB\n"
      "INFO 12-05 [kv_cache_utils.py:3] GPU KV cache size: 4,455,808 tokens\n"
      "INFO 12-05 [kv_cache_utils.py:4] Maximum concurrency for 32,768 tokens per request: 135.98x\n");
  EXPECT_EQ(vllm.weights_gib, 14.9908);
  EXPECT_EQ(vllm.load_s, 5.123456);
  EXPECT_EQ(vllm.kv_cache_gib, 112.5);
  EXPECT_EQ(vllm.kv_cache_tokens, 4455808);
  EXPECT_EQ(vllm.worst_case_concurrency, 135.98);
  const ServerStartup sglang = parse_server_startup(
      "[2026-03-11 13:53:21 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=32.02 GB, mem usage=28.79 GB.\n"
      "[2026-03-11 13:53:23 TP0] KV Cache is allocated. #tokens: 383872, K size: 9.68 GB, V size: 9.68 GB\n"
      "[2026-03-11 13:53:24 TP0] max_total_num_tokens=383872, chunked_prefill_size=8192, max_prefill_tokens=16384, "
      "max_running_requests=256, context_len=32768\n");
  EXPECT_EQ(sglang.weights_gib, 28.79);
  EXPECT_EQ(sglang.kv_cache_tokens, 383872);
  ASSERT_TRUE(sglang.kv_cache_gib.has_value());
  EXPECT_NEAR(*sglang.kv_cache_gib, 19.36, 1e-9);
  EXPECT_EQ(sglang.max_model_len, 32768);
  EXPECT_EQ(parse_server_startup("[TP0] KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB\n").kv_cache_gib,
            17.16);
}

}  // namespace
}  // namespace crosspoint::sweep
