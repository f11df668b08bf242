// The Qwen2 / Llama decoder on one NVIDIA GPU. Built from a loaded crosspoint::Model (its
// config and per-layer weight formats), it uploads the weights once (fp16 dense, W8A8-FP8 or
// W4A16 per layer, q|k|v and gate|up fused; embedding, norms and lm_head fp16), preallocates
// every activation buffer for the engine's limits, measures the peak of a profile step, and
// gives the rest of --gpu-memory-utilization to a paged KV cache:
//   per layer, K and V: [num_blocks, block_size, num_kv_heads, head_dim] fp16, or e4m3 bytes
//   with the layer's per-tensor k/v scales (--kv-cache-dtype fp8)
// forward() runs the sequence of kernels/cuda/decoder_ops.h on one stream with no allocation
// and no synchronisation, so it can be captured in a CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "model/cuda/cuda_linear.h"
#include "model/cuda/device_buffer.h"
#include "model/step_inputs.h"
#include "model/cuda/step_profiler.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace crosspoint::cuda {

// CUDA devices visible to this process (0 when there is no driver or no GPU).
int cuda_device_count();

// Tokens per step up to which CudaModelOptions::fuse_fp8_input applies.
inline constexpr int kFp8InputFusedMaxTokens = 128;

struct CudaModelOptions {
  int32_t max_num_tokens = 2048;        // tokens per step (max_num_batched_tokens)
  int32_t max_num_seqs = 256;           // sequences per step
  int32_t max_num_logits = 0;           // logits rows per step; 0 = max_num_seqs
  int32_t max_model_len = 0;            // 0 = config max_position_embeddings
  int32_t block_size = 16;              // tokens per KV block
  double gpu_memory_utilization = 0.9;  // fraction of the GPU's total memory this process may use
  size_t memory_budget_bytes = 0;       // > 0: bytes for weights + activations + reserve + KV, not the fraction
  int64_t num_kv_blocks = 0;            // > 0: exactly this many blocks, utilization ignored (tests, generate)
  size_t reserve_bytes = 0;             // kept free after the KV cache (CUDA graphs are captured later)
  int device = 0;
  // serve --deterministic: linears on fixed slabs of kBatchInvariantRows rows and attention in
  // one partition per row, so a row's logits do not depend on the rest of the batch.
  bool batch_invariant = false;
  // --kv-cache-dtype fp8: e4m3 K/V (half the bytes per token) with each layer's k_scale /
  // v_scale from the checkpoint (DecoderLayerWeights), else fp16.
  bool kv_fp8 = false;
  // W8A8-FP8 linears after a norm or silu_mul take their input quantised by that step (its
  // Fp8Rows output, the same bits) instead of quantising it in a launch of their own, in steps
  // of up to kFp8InputFusedMaxTokens tokens. false:
  // the separate launch (bench_decode_step --fp8-input-unfused measures the difference).
  bool fuse_fp8_input = true;
};

// What the startup log prints.
struct CudaMemoryReport {
  std::string gpu_name;
  size_t total_bytes = 0;           // the GPU's memory
  size_t weight_bytes = 0;          // weights as uploaded
  size_t activation_bytes = 0;      // measured: activation buffers, workspaces and the profile step's growth
  size_t used_before_kv_bytes = 0;  // everything in use on the device before the KV cache
  size_t reserve_bytes = 0;
  size_t kv_bytes = 0;
  int64_t num_kv_blocks = 0;
  int64_t kv_tokens = 0;
  size_t kv_bytes_per_token = 0;  // K and V (fp16 or e4m3) across all layers
  double upload_s = 0;            // weight conversion and upload
  double profile_s = 0;           // buffers and the profile step
};

// ForwardBatch on the device: pointers into the model's packed step-input buffer, plus the
// host integers every launch is sized by (for a captured graph, the bucket's bounds).
struct CudaForwardBatch {
  const int32_t* token_ids = nullptr;         // [num_tokens]
  const int32_t* positions = nullptr;         // [num_tokens]
  const int32_t* slot_mapping = nullptr;      // [num_tokens], -1 = K/V not stored
  const int32_t* seq_token_start = nullptr;   // [num_seqs + 1]
  const int32_t* seq_context_len = nullptr;   // [num_seqs]
  const int32_t* logits_token_idx = nullptr;  // [num_logits]
  const int32_t* block_tables = nullptr;      // [num_seqs, block_table_stride]
  PackedStepShape shape;
};

class CudaModel {
 public:
  static Result<std::unique_ptr<CudaModel>> create(const Model& model, const CudaModelOptions& options);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  // Checks and packs `batch` into the pinned staging buffer and copies it to the device on
  // stream() (one cudaMemcpyAsync). The staging buffer is reused: the previous step must be
  // finished (the runner synchronises at the end of each step).
  Result<CudaForwardBatch> upload_inputs(const ForwardBatch& batch, int32_t block_table_stride,
                                         int32_t num_stored_tokens);
  // The device batch for a shape whose arrays are already on the device (graph replay).
  CudaForwardBatch device_batch(const PackedStepShape& shape) const;

  // Writes K/V of the batch's tokens into the cache and the logits of its logits rows into
  // logits() [num_logits, vocab] fp16. Launches only; no synchronisation.
  Status forward(const CudaForwardBatch& batch);

  // For tests and `generate`: upload, forward, and copy the logits out as f32
  // [num_logits, vocab]. Synchronises.
  Status forward_host(const ForwardBatch& batch, float* logits);

  // Per-op timing of eager steps (benchmarks; model/cuda/step_profiler.h). With a profiler
  // set, forward() opens a step on it (refusing while the stream is being captured) and marks
  // every op; the caller marks what it runs after forward and calls finish(). nullptr (the
  // default) records nothing. The profiler must outlive its use here.
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }

  cudaStream_t stream() const { return stream_; }
  int32_t vocab_size() const { return vocab_size_; }
  int32_t block_size() const { return options_.block_size; }
  int32_t max_model_len() const { return options_.max_model_len; }
  int64_t num_kv_blocks() const { return num_kv_blocks_; }
  const StepInputCapacity& capacity() const { return layout_.capacity; }
  const CudaMemoryReport& memory() const { return memory_; }
  const CudaModelOptions& options() const { return options_; }
  std::string weight_format_name() const { return weight_format_name_; }

  // Buffers the runner samples from (device unless named host; fixed addresses).
  const uint16_t* logits() const { return logits_.as<uint16_t>(); }  // [max_num_logits, vocab] fp16

 private:
  struct Layer {
    DeviceBuffer input_norm;               // [d] fp16
    DeviceBuffer post_attention_norm;      // [d] fp16
    DeviceBuffer q_norm, k_norm;           // [D] fp16 each (Qwen3's per-head q/k norms), else empty
    CudaLinear qkv;                        // d -> (H + 2 Hkv) D, with the q|k|v bias when the model has one
    CudaLinear o_proj;                     // H D -> d
    CudaLinear gate_up;                    // d -> 2 I (gate first)
    CudaLinear down_proj;                  // I -> d
    float k_scale = 1.0f, v_scale = 1.0f;  // the fp8 KV cache's per-tensor scales
  };

  CudaModel() = default;
  Status init_device();
  Status upload_weights(const Model& model);
  Status allocate_activations();
  Status allocate_kv_cache(int64_t num_blocks);
  Status profile_step();
  Status run_layer(int32_t layer_idx, const CudaForwardBatch& b);
  // One layer's K or V cache: fp16 elements, or e4m3 bytes with options_.kv_fp8.
  void* key_cache(int32_t layer_idx) const;
  void* value_cache(int32_t layer_idx) const;
  size_t kv_element_bytes() const { return options_.kv_fp8 ? 1 : 2; }
  void mark(StepOp op) {
    if (profiler_ != nullptr) profiler_->mark(op);
  }

  CudaModelOptions options_;
  ModelConfig config_;
  int32_t vocab_size_ = 0;
  std::string weight_format_name_;
  CudaMemoryReport memory_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CublasLtContext> cublas_;

  // Weights.
  DeviceBuffer embed_tokens_;            // [vocab, d] fp16
  DeviceBuffer lm_head_;                 // [vocab, d] fp16; empty when tied (embed_tokens_ is used)
  DeviceBuffer final_norm_;              // [d] fp16
  DeviceBuffer rope_inv_freq_;           // [D / 2] f32
  float rope_attention_scaling_ = 1.0f;  // YaRN's factor on cos and sin, else 1
  std::vector<Layer> layers_;

  // KV cache: [num_layers][K | V][num_blocks, block_size, Hkv, D] fp16.
  DeviceBuffer kv_cache_;
  int64_t num_kv_blocks_ = 0;

  // Step inputs: pinned staging and its device copy, one fixed layout.
  StepInputLayout layout_;
  PinnedBuffer inputs_host_;  // [layout_.total] int32
  DeviceBuffer inputs_;       // [layout_.total] int32

  // Activations, T = max_num_tokens rows, R = max_num_logits rows.
  DeviceBuffer residual_;  // [T, d] f32
  DeviceBuffer x_;         // [T, d] fp16 normed input of the next linear
  DeviceBuffer qkv_;       // [T, (H + 2 Hkv) D] fp16
  DeviceBuffer attn_;      // [T, H D] fp16
  DeviceBuffer delta_;     // [T, d] fp16 o_proj / down_proj output, added to the residual
  DeviceBuffer gate_up_;   // [T, 2 I] fp16
  DeviceBuffer act_;       // [T, I] fp16 silu(gate) * up
  DeviceBuffer head_in_;   // [R, d] fp16 final-normed rows whose logits are wanted
  DeviceBuffer logits_;    // [R, vocab] fp16
  DeviceBuffer attention_workspace_;
  DeviceBuffer xq_;                 // [T, max K] e4m3 or int8 (w8a8 and int8 layers)
  DeviceBuffer x_scale_;            // [T] f32 (w8a8 and int8 layers)
  DeviceBuffer fp8_epilogue_;       // [T, max N] f32 when cuBLASLt lacks outer-vector scales
  DeviceBuffer int8_sums_;          // [T, max N] int32 (W8A8-INT8 layers)
  DeviceBuffer group_x_scale_;      // [max K / 128, T] f32 (block-wise FP8 layers)
  DeviceBuffer x_perm_;             // [T, max K] fp16 (act-order w4a16 layers)
  DeviceBuffer w4a16_weight_fp16_;  // [max N * K] fp16: one w4a16 layer dequantised (many-row steps)
  CudaLinearScratch scratch_;

  StepProfiler* profiler_ = nullptr;  // not owned; nullptr = no per-op events
};

}  // namespace crosspoint::cuda
