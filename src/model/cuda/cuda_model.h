// The Qwen2 / Llama decoder on one NVIDIA GPU, whole or as one tensor-parallel rank's share
// (CudaModelOptions::share). Built from a loaded crosspoint::Model (its
// config and per-layer weight formats), it uploads the weights once (fp16 dense, W8A8-FP8 or
// W4A16 per layer, q|k|v and gate|up fused; embedding, norms and lm_head fp16), preallocates
// every activation buffer for the engine's limits and measures the peak of a profile step
// (on a temporary KV cache and step-input staging of its own, freed before it measures). It
// reports what it uses and the KV bytes per token (memory()); the KV cache itself
// (model/cuda/cuda_kv_cache.h: per layer, K and V [num_blocks, block_size, num_kv_heads,
// head_dim] fp16, or e4m3 bytes with the layer's per-tensor k/v scales, --kv-cache-dtype fp8)
// and the step-input staging (model/cuda/step_input_staging.h) belong to the caller: the
// runner (runner/cuda/cuda_model_runner.h) sizes the cache under --gpu-memory-utilization and
// owns both, as CpuModelRunner owns the CPU model's cache.
// forward(batch, kv_cache) runs the sequence of kernels/cuda/decoder_ops.h on one stream with
// no allocation and no synchronisation, so it can be captured in a CUDA graph.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "model/cuda/cuda_kv_cache.h"
#include "model/cuda/cuda_linear.h"
#include "model/cuda/device_buffer.h"
#include "model/cuda/step_input_staging.h"
#include "model/cuda/step_profiler.h"
#include "model/cuda/tensor_parallel_comm.h"
#include "model/forward_batch.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/step_inputs.h"

namespace crosspoint::cuda {

// CUDA devices visible to this process (0 when there is no driver or no GPU).
int cuda_device_count();

// Tokens per step up to which CudaModelOptions::fuse_fp8_input applies.
inline constexpr int kFp8InputFusedMaxTokens = 128;

struct CudaModelOptions {
  int32_t max_num_tokens = 2048;  // tokens per step (max_num_batched_tokens)
  int32_t max_num_seqs = 256;     // sequences per step
  int32_t max_num_logits = 0;     // logits rows per step; 0 = max_num_seqs
  int32_t max_model_len = 0;      // 0 = config max_position_embeddings
  int32_t block_size = 16;        // tokens per KV block
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
  // --dtype: the activations, dense weights, KV cache and logits in fp16 (kF16) or bf16 (kBF16,
  // unquantised checkpoints only; not with kv_fp8). The residual stream is fp32 either way.
  DType activation_dtype = DType::kF16;
  // -tp: this model is one rank of a tensor-parallel split (TensorParallelModel::share: its
  // heads, KV heads, intermediate columns and vocabulary rows), summing o_proj's and down_proj's
  // partial outputs and its logits columns with the others through comm. Both outlive the model.
  // Every rank's create() must run at the same time, each on a thread of its own (its profile
  // step sums over the ranks; its host-side work runs on a thread pool of the rank's).
  // nullptr: the whole model.
  const RankShare* share = nullptr;
  int32_t rank = 0;
  TensorParallelComm* comm = nullptr;
};

// The four linears of a decoder layer, in the order the layer runs them.
enum class LayerLinear { kQkv, kOProj, kGateUp, kDownProj };

// Stops run_layer before one of its linears and hands that linear's input to `observe`: fp16
// [rows, in_features] on the model's stream (GPTQ calibration, quant/cuda/gpu_gptq_calibration.h).
struct LayerProbe {
  LayerLinear stop_before = LayerLinear::kQkv;
  std::function<Status(const uint16_t* input, int32_t rows)> observe;
};

// What the startup log prints. CudaModel::memory() fills what the model knows (the KV fields
// zero); CudaModelRunner::memory() the whole of it, once the runner has sized its KV cache.
struct CudaMemoryReport {
  std::string gpu_name;
  size_t total_bytes = 0;           // the GPU's memory
  size_t weight_bytes = 0;          // weights as uploaded
  size_t activation_bytes = 0;      // measured: activation buffers, workspaces and the profile step's growth
  size_t used_before_kv_bytes = 0;  // everything in use on the device before the KV cache
  size_t reserve_bytes = 0;         // runner: kept free after the KV cache
  size_t kv_bytes = 0;              // runner: the KV cache
  int64_t num_kv_blocks = 0;        // runner
  int64_t kv_tokens = 0;            // runner
  size_t kv_bytes_per_token = 0;    // K and V (fp16 or e4m3) across all layers
  double upload_s = 0;              // weight conversion and upload
  double profile_s = 0;             // buffers and the profile step
};

class CudaModel {
 public:
  static Result<std::unique_ptr<CudaModel>> create(const Model& model, const CudaModelOptions& options);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  // The shape of a KV cache of num_blocks blocks for this model (its layers, kv heads,
  // head_dim, block size; fp16, or e4m3 with kv_fp8), and one allocated (zeroed).
  KvCacheShape kv_cache_shape(int32_t num_blocks) const;
  Result<CudaKvCache> make_kv_cache(int32_t num_blocks) const;
  // K and V of one token across all layers, in the cache's dtype.
  size_t kv_bytes_per_token() const { return kv_cache_shape(1).bytes_per_token(); }
  // Step-input staging sized for capacity() and this model's vocabulary.
  Result<StepInputStaging> make_step_inputs() const;

  // Writes K/V of the batch's tokens into kv (a cache of kv_cache_shape()) and the logits of
  // its logits rows into logits() [num_logits, vocab] fp16. Launches only; no synchronisation.
  // The batch's block ids must be below kv.num_blocks() (StepInputStaging::upload checks).
  Status forward(const CudaForwardBatch& batch, CudaKvCache& kv);

  // For tests and eval: upload through `inputs`, forward on kv, and copy the logits out as f32
  // [num_logits, vocab]. Synchronises.
  Status forward_host(const ForwardBatch& batch, CudaKvCache& kv, StepInputStaging& inputs, float* logits);

  // The decoder a layer at a time (GPTQ calibration runs many batches through one layer before
  // the next): embed() starts the residual stream of b's tokens, run_layer() runs one layer on it
  // (to the probe's linear when one is given), and the stream between layers (the f32 residual
  // and the last layer's pending output) is saved and restored by the caller. Launches only.
  Status embed(const CudaForwardBatch& b);
  Status run_layer(int32_t layer_idx, const CudaForwardBatch& b, const CudaKvCache& kv,
                   const LayerProbe* probe = nullptr);
  size_t residual_stream_bytes(int32_t num_tokens) const;
  Status save_residual_stream(void* device_dst, int32_t num_tokens) const;
  Status load_residual_stream(const void* device_src, int32_t num_tokens);
  // A layer's linear, whose weights a quantiser may rewrite in place (same format and shape).
  CudaLinear& layer_linear(int32_t layer_idx, LayerLinear which);
  int32_t num_layers() const { return static_cast<int32_t>(layers_.size()); }

  // Per-op timing of eager steps (benchmarks; model/cuda/step_profiler.h). With a profiler
  // set, forward() opens a step on it (refusing while the stream is being captured) and marks
  // every op; the caller marks what it runs after forward and calls finish(). nullptr (the
  // default) records nothing. The profiler must outlive its use here.
  void set_profiler(StepProfiler* profiler) { profiler_ = profiler; }

  cudaStream_t stream() const { return stream_; }
  int32_t vocab_size() const { return vocab_size_; }
  int32_t block_size() const { return options_.block_size; }
  int32_t max_model_len() const { return options_.max_model_len; }
  const StepInputCapacity& capacity() const { return capacity_; }
  const CudaMemoryReport& memory() const { return memory_; }
  const CudaModelOptions& options() const { return options_; }
  std::string weight_format_name() const { return weight_format_name_; }

  // Buffers the runner samples from (device unless named host; fixed addresses).
  const uint16_t* logits() const { return logits_.as<uint16_t>(); }     // [max_num_logits, vocab] fp16 or bf16
  DType activation_dtype() const { return options_.activation_dtype; }  // of logits() and the activations

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
  Status profile_step();
  // Whether every rank loaded: each joins one sum of failure flags, a failed rank too, so no rank
  // waits in the profile step's collectives for one that has returned. mine, else unavailable
  // when another rank failed.
  Status agree_over_ranks(const Status& mine);
  // Sums the rank's partial output over the ranks (nothing without a comm).
  Status sum_over_ranks(void* data, int64_t n);
  // A split's lm_head: the rank's vocabulary columns of R rows, gathered from every rank into logits_.
  Status split_lm_head(const uint16_t* head, int R);
  void mark(StepOp op) {
    if (profiler_ != nullptr) profiler_->mark(op);
  }

  CudaModelOptions options_;
  ModelConfig config_;
  int32_t vocab_size_ = 0;
  // This rank's share of the decoder (the config's at one rank) and its logits columns.
  int64_t heads_ = 0, kv_heads_ = 0, intermediate_ = 0;
  int64_t vocab_begin_ = 0, vocab_end_ = 0;
  std::string weight_format_name_;
  CudaMemoryReport memory_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CublasLtContext> cublas_;

  // Weights.
  DeviceBuffer embed_tokens_;            // [vocab, d] fp16
  DeviceBuffer lm_head_;                 // [vocab, d] fp16 (a rank's vocabulary rows); empty when tied
  DeviceBuffer final_norm_;              // [d] fp16
  DeviceBuffer rope_inv_freq_;           // [D / 2] f32
  float rope_attention_scaling_ = 1.0f;  // YaRN's factor on cos and sin, else 1
  std::vector<Layer> layers_;

  // The step inputs the buffers below are sized for (the staging's too).
  StepInputCapacity capacity_;

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
  // A rank of a split: its lm_head rows' logits [R, Vr] (Vr = ceil(vocab / ranks) columns, the
  // last rank's partly unused), and every rank's gathered [ranks, R, Vr] before they are laid
  // out into logits_.
  DeviceBuffer head_out_;
  DeviceBuffer gathered_logits_;
  DeviceBuffer attention_workspace_;
  DeviceBuffer xq_;                 // [T, max K] e4m3 or int8 (w8a8 and int8 layers)
  DeviceBuffer x_scale_;            // [T] f32 (w8a8 and int8 layers)
  DeviceBuffer fp8_epilogue_;       // [T, max N] f32 when cuBLASLt lacks outer-vector scales
  DeviceBuffer int8_sums_;          // [T, max N] int32 (W8A8-INT8 layers)
  DeviceBuffer group_x_scale_;      // [max K / 128, T] f32 (block-wise FP8 layers)
  DeviceBuffer x_perm_;             // [T, max K] fp16 (act-order w4a16 layers)
  DeviceBuffer w4a16_weight_fp16_;  // [max N * K] fp16: one w4a16 layer dequantised (many-row steps)
  CudaLinearScratch scratch_;

  DeviceBuffer rank_flag_;            // [1] f32: agree_over_ranks's sum (tensor-parallel ranks)
  StepProfiler* profiler_ = nullptr;  // not owned; nullptr = no per-op events
};

}  // namespace crosspoint::cuda
