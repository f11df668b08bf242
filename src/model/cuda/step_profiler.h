// Where the time of one eager CudaModel step goes, op by op, for benchmarks.
//
// A StepProfiler set on the model (CudaModel::set_profiler) makes forward() record one
// cudaEvent at the start of the step and one after every op; the time of an op is the
// GPU time between the event before it and its own, summed per category (StepOp). With no
// profiler set (the default) forward records nothing: the hook is one pointer test per op.
//
// What the numbers mean: an eager step's op time includes any time the GPU sat idle waiting
// for the host to launch that op (at small batch an eager step is launch-bound), plus the
// events' own small cost. Only eager steps can be profiled: events recorded during stream
// capture would become graph nodes, so begin_step refuses while the stream is capturing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace crosspoint::cuda {

// The op categories of a decoder step, in the order they run.
enum class StepOp : int32_t {
  kEmbedding,          // embedding_gather: residual = embed[token]
  kInputNorm,          // add_rms_norm: the previous layer's down_proj joins the residual, then input_layernorm
  kQkvProj,            // fused q|k|v linear (see the note on quantised linears below)
  kRopeKvWrite,        // q|k|v bias, RoPE on q and k, K and V stored into the paged cache
  kAttention,          // paged attention (decode split kernel or causal prefill)
  kOProj,              // o_proj linear
  kPostAttentionNorm,  // add_rms_norm: o_proj joins the residual, then post_attention_layernorm
  kGateUpProj,         // fused gate|up linear
  kSiluMul,            // silu(gate) * up
  kDownProj,           // down_proj linear
  kFinalNormGather,    // final add_rms_norm over every row, then the logits rows gathered
  kLmHead,             // lm_head linear (fp16)
  kArgmax,             // greedy argmax over the logits rows (marked by the caller: it runs after forward)
};
// Quantised linears: a W8A8 linear's time includes the per-token fp8 quantisation of its
// input (fp8_quantize_per_token, a separate kernel before the GEMM) and a W4A16 act-order
// linear's the column permutation of its input (w4a16_permute_columns); both run inside
// run_cuda_linear, so they are counted in the linear they feed.
inline constexpr int32_t kNumStepOps = 13;

// "embedding", "input_norm", "qkv_proj", "rope_kv_write", "attention", "o_proj",
// "post_attention_norm", "gate_up_proj", "silu_mul", "down_proj", "final_norm_gather",
// "lm_head", "argmax".
const char* step_op_name(StepOp op);

// One category's share of a step.
struct StepOpTime {
  StepOp op = StepOp::kEmbedding;
  double total_ms = 0;    // GPU ms summed over its calls
  int32_t num_calls = 0;  // marks of this category (one per layer for per-layer ops); a call may be
                          // several kernel launches (a W8A8 linear: quantise + GEMM)
};

// Per-category times of one step.
struct StepProfile {
  std::vector<StepOpTime> ops;  // the categories that ran, in StepOp order
  double total_ms = 0;          // start event to last mark (the sum of ops' total_ms)
  int32_t num_marks = 0;        // op calls marked in the step

  // The category's entry, or nullptr when it did not run.
  const StepOpTime* find(StepOp op) const;
};

// Host-only bookkeeping: marks[i] is the category of the i-th op of a step and gaps_ms[i]
// the ms from the event before it to its own. Sizes must match (a programmer error otherwise).
StepProfile summarize_step(const std::vector<StepOp>& marks, const std::vector<float>& gaps_ms);

class StepProfiler {
 public:
  StepProfiler() = default;
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Opens a step on `stream` by recording its start event. Does nothing when a step is already
  // open on the same stream (forward() calls it, so a caller may open the step earlier to
  // include its own launches). Fails while `stream` is being captured into a CUDA graph, or
  // when a step is open on another stream.
  Status begin_step(cudaStream_t stream);
  bool step_open() const { return open_; }

  // Records the end of one call of `op` on the open step's stream. Errors (no open step, a
  // failed cudaEventRecord) are kept and returned by finish(), so the forward code stays one
  // line per op.
  void mark(StepOp op);

  // Waits for the step's last event, closes the step and returns its per-category times.
  // Events are kept for the next step (the first profiled step also creates them).
  Result<StepProfile> finish();

 private:
  Status record_next_event();

  cudaStream_t stream_ = nullptr;
  bool open_ = false;
  Status error_;                     // the first error of the open step
  std::vector<cudaEvent_t> events_;  // pool; events_[0] is the step's start, events_[i + 1] ends marks_[i]
  size_t num_recorded_ = 0;          // events of the open step recorded so far
  std::vector<StepOp> marks_;        // [num_recorded_ - 1] category of each op
};

}  // namespace crosspoint::cuda
