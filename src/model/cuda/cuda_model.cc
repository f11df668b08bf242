#include "model/cuda/cuda_model.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/clock.h"
#include "common/dtype.h"
#include "common/thread_pool.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/head_rms_norm.h"
#include "kernels/cuda/linear.h"
#include "kernels/cuda/paged_attention.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "model/host_forward_batch.h"

namespace crosspoint::cuda {
namespace {

size_t fp16_bytes(int64_t rows, int64_t cols) { return static_cast<size_t>(rows) * cols * 2; }

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

CudaModel::~CudaModel() {
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
}

Result<std::unique_ptr<CudaModel>> CudaModel::create(const Model& model, const CudaModelOptions& options) {
  std::unique_ptr<CudaModel> m(new CudaModel());
  m->options_ = options;
  m->config_ = model.config();
  m->vocab_size_ = model.vocab_size();
  CudaModelOptions& o = m->options_;
  if (o.max_model_len <= 0) o.max_model_len = static_cast<int32_t>(m->config_.max_position_embeddings);
  if (o.max_num_logits <= 0) o.max_num_logits = o.max_num_seqs;
  if (o.max_num_tokens <= 0 || o.max_num_seqs <= 0 || o.max_model_len <= 0 || o.block_size <= 0)
    return invalid_argument(
        "cuda model: max-num-batched-tokens, max-num-seqs, max-model-len and block size must be positive");
  const ModelConfig& c = m->config_;
  if (c.qk_norm && c.attention_bias)  // rope_kv_write adds the bias, which would have to come before the norm
    return unsupported("cuda model: per-head q/k norms together with a q/k/v bias are not implemented");
  if (c.head_dim % 2 != 0 || c.head_dim > 256 || c.num_attention_heads % c.num_key_value_heads != 0)
    return unsupported("cuda model: head_dim " + std::to_string(c.head_dim) + " with " +
                       std::to_string(c.num_attention_heads) + " heads and " + std::to_string(c.num_key_value_heads) +
                       " kv heads is not supported (even head_dim <= 256, heads a multiple of kv heads)");
  if (o.activation_dtype != DType::kF16 && o.activation_dtype != DType::kBF16)
    return invalid_argument("cuda model: activations must be float16 or bfloat16");
  m->heads_ = c.num_attention_heads;
  m->kv_heads_ = c.num_key_value_heads;
  m->intermediate_ = c.intermediate_size;
  m->vocab_end_ = m->vocab_size_;
  if (o.share != nullptr) {
    const RankShare& share = *o.share;
    if (o.comm == nullptr || o.rank < 0 || o.rank >= o.comm->world_size())
      return invalid_argument("cuda model: a rank's share needs the ranks' comm and a rank below its world size");
    if (static_cast<int64_t>(share.layers.size()) != c.num_hidden_layers || share.lm_head == nullptr ||
        share.num_heads <= 0 || share.num_kv_heads <= 0 || share.num_heads % share.num_kv_heads != 0)
      return invalid_argument("cuda model: rank " + std::to_string(o.rank) +
                              "'s share lacks layers, an lm_head slice or whole heads");
    m->heads_ = share.num_heads;
    m->kv_heads_ = share.num_kv_heads;
    m->intermediate_ = share.intermediate;
    m->vocab_begin_ = share.vocab.begin;
    m->vocab_end_ = share.vocab.end;
  }
  if (o.activation_dtype == DType::kBF16 && o.kv_fp8)
    return unsupported(
        "cuda model: --kv-cache-dtype fp8 is written from float16 activations; with --dtype bfloat16 "
        "use --kv-cache-dtype auto");
  // Ranks load at once on threads of their own: the host-side conversions of each run on a pool
  // of its own (the process-wide one takes one caller at a time).
  std::optional<ThreadPool> rank_pool;
  std::optional<ThreadPoolScope> rank_scope;
  if (o.share != nullptr) {
    rank_pool.emplace(std::max(1, default_num_threads() / o.comm->world_size()));
    rank_scope.emplace(*rank_pool);
  }
  CROSSPOINT_RETURN_IF_ERROR(m->init_device());

  Stopwatch upload_timer;
  Status ready = m->upload_weights(model);
  m->memory_.upload_s = upload_timer.elapsed_seconds();

  Stopwatch profile_timer;
  size_t free_before = 0, total = 0;
  if (ready.is_ok() && cudaMemGetInfo(&free_before, &total) != cudaSuccess)
    ready = internal_error("cuda model: cudaMemGetInfo failed");
  if (ready.is_ok()) ready = m->allocate_activations();
  if (o.share != nullptr) ready = m->agree_over_ranks(ready);
  CROSSPOINT_RETURN_IF_ERROR(ready);
  CROSSPOINT_RETURN_IF_ERROR(m->profile_step());
  size_t free_after = 0;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
  m->memory_.profile_s = profile_timer.elapsed_seconds();
  m->memory_.total_bytes = total;
  m->memory_.activation_bytes = free_before > free_after ? free_before - free_after : 0;
  m->memory_.used_before_kv_bytes = total - free_after;
  m->memory_.kv_bytes_per_token = m->kv_bytes_per_token();
  return m;
}

Status CudaModel::init_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return unsupported(std::string("--device cuda: no CUDA device is available (") +
                       (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")");
  }
  if (options_.device < 0 || options_.device >= count)
    return invalid_argument("cuda: device " + std::to_string(options_.device) + " of " + std::to_string(count));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device), "cudaSetDevice");
  cudaDeviceProp prop{};
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options_.device), "cudaGetDeviceProperties");
  memory_.gpu_name = prop.name;
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  CROSSPOINT_ASSIGN_OR_RETURN(cublas_, CublasLtContext::create());
  if (options_.share != nullptr) {
    CROSSPOINT_ASSIGN_OR_RETURN(rank_flag_, DeviceBuffer::allocate(sizeof(float), "rank agreement"));
  }
  return Status::ok();
}

Status CudaModel::upload_weights(const Model& model) {
  const ModelConfig& c = config_;
  const DType element = options_.activation_dtype;
  auto upload_element16 = [element](const TensorInfo& t, const std::string& what) -> Result<DeviceBuffer> {
    const std::vector<uint16_t> h = to_element16(t.data, t.dtype, t.num_elements(), element);
    return upload_bytes(h.data(), h.size() * 2, what);
  };
  CROSSPOINT_ASSIGN_OR_RETURN(embed_tokens_, upload_element16(model.embed_tokens(), "model.embed_tokens.weight"));
  CROSSPOINT_ASSIGN_OR_RETURN(final_norm_, upload_element16(model.final_norm(), "model.norm.weight"));
  const RankShare* share = options_.share;
  const LinearWeight& head_weight = share != nullptr ? *share->lm_head : model.lm_head();
  const LinearWeightView head_view = head_weight.view();
  const auto* head = std::get_if<DenseWeightStorage>(&head_view.storage);
  if (head == nullptr)
    return unsupported("cuda model: lm_head is " + head_weight.format_name() + "; the CUDA path keeps it fp16");
  if (head->weight != model.embed_tokens().data) {  // untied, or a rank's slice: its own tensor
    const std::vector<uint16_t> h =
        to_element16(head->weight, head->dtype, (vocab_end_ - vocab_begin_) * c.hidden_size, element);
    CROSSPOINT_ASSIGN_OR_RETURN(lm_head_, upload_bytes(h.data(), h.size() * 2, "lm_head.weight"));
  }
  const std::vector<float>& inv_freq = model.rope_inverse_frequencies();
  CROSSPOINT_ASSIGN_OR_RETURN(rope_inv_freq_, upload_bytes(inv_freq.data(), inv_freq.size() * 4, "rope inv_freq"));
  rope_attention_scaling_ = model.rope_attention_scaling();

  size_t bytes = embed_tokens_.bytes() + lm_head_.bytes() + final_norm_.bytes() + rope_inv_freq_.bytes();
  layers_.resize(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const DecoderLayerWeights& w = model.layers()[i];
    // The rank's shards of the layer's linears, else the checkpoint's.
    const RankLayerLinears whole{w.q_proj.get(),    w.k_proj.get(),  w.v_proj.get(),   w.o_proj.get(),
                                 w.gate_proj.get(), w.up_proj.get(), w.down_proj.get()};
    const RankLayerLinears& lin = share != nullptr ? share->layers[i] : whole;
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = layers_[i];
    l.k_scale = w.k_scale;
    l.v_scale = w.v_scale;
    CROSSPOINT_ASSIGN_OR_RETURN(l.input_norm, upload_element16(*w.input_norm, p + "input_layernorm.weight"));
    CROSSPOINT_ASSIGN_OR_RETURN(l.post_attention_norm,
                                upload_element16(*w.post_attention_norm, p + "post_attention_layernorm.weight"));
    if (w.q_norm != nullptr) {
      CROSSPOINT_ASSIGN_OR_RETURN(l.q_norm, upload_element16(*w.q_norm, p + "self_attn.q_norm.weight"));
      CROSSPOINT_ASSIGN_OR_RETURN(l.k_norm, upload_element16(*w.k_norm, p + "self_attn.k_norm.weight"));
    }
    CROSSPOINT_ASSIGN_OR_RETURN(l.qkv, upload_fused_linear({{p + "self_attn.q_proj", lin.q_proj},
                                                            {p + "self_attn.k_proj", lin.k_proj},
                                                            {p + "self_attn.v_proj", lin.v_proj}},
                                                           c.attention_bias, p + "self_attn.qkv", element));
    CROSSPOINT_ASSIGN_OR_RETURN(
        l.o_proj, upload_fused_linear({{p + "self_attn.o_proj", lin.o_proj}}, false, p + "self_attn.o_proj", element));
    CROSSPOINT_ASSIGN_OR_RETURN(
        l.gate_up, upload_fused_linear({{p + "mlp.gate_proj", lin.gate_proj}, {p + "mlp.up_proj", lin.up_proj}}, false,
                                       p + "mlp.gate_up", element));
    CROSSPOINT_ASSIGN_OR_RETURN(
        l.down_proj, upload_fused_linear({{p + "mlp.down_proj", lin.down_proj}}, false, p + "mlp.down_proj", element));
    bytes += l.input_norm.bytes() + l.post_attention_norm.bytes() + l.q_norm.bytes() + l.k_norm.bytes() +
             l.qkv.device_bytes() + l.o_proj.device_bytes() + l.gate_up.device_bytes() + l.down_proj.device_bytes();
  }
  memory_.weight_bytes = bytes;
  weight_format_name_ = layers_.empty() ? "none" : cuda_linear_format_name(layers_[0].qkv.format);
  if (!layers_.empty() && layers_[0].qkv.format == CudaLinearFormat::kW4A16)
    weight_format_name_ +=
        "-g" + std::to_string(layers_[0].qkv.group_size) + (layers_[0].qkv.k_perm.empty() ? "" : "-act");
  if (!layers_.empty() && layers_[0].qkv.format == CudaLinearFormat::kFp8Block)
    weight_format_name_ += "128x128";  // the only blocks cuda runs; as the CPU names it
  if (!layers_.empty() && !layers_[0].qkv.input_scale.empty()) weight_format_name_ += "-static";  // as the CPU names it
  return Status::ok();
}

Status CudaModel::allocate_activations() {
  const ModelConfig& c = config_;
  const CudaModelOptions& o = options_;
  // Batch-invariant mode: every buffer a linear reads or writes holds whole slabs.
  const int64_t slab = o.batch_invariant ? kBatchInvariantRows : 1;
  // Rows of the activation buffers: whole slabs, and a multiple of 4 (block-wise FP8's GEMM runs
  // on rows rounded up to one: fp8_block_padded_rows).
  const int64_t T = ((o.max_num_tokens + slab - 1) / slab * slab + 3) / 4 * 4;
  const int64_t R = (o.max_num_logits + slab - 1) / slab * slab;
  const int64_t d = c.hidden_size, D = c.head_dim;
  const int64_t H = heads_, Hkv = kv_heads_, I = intermediate_, V = vocab_size_;
  const int64_t qkv_width = (H + 2 * Hkv) * D;

  capacity_.max_num_tokens = o.max_num_tokens;
  capacity_.max_num_seqs = o.max_num_seqs;
  capacity_.max_num_logits = o.max_num_logits;
  capacity_.max_blocks_per_seq = (o.max_model_len + o.block_size - 1) / o.block_size;

  CROSSPOINT_ASSIGN_OR_RETURN(residual_, DeviceBuffer::allocate(static_cast<size_t>(T) * d * 4, "residual"));
  CROSSPOINT_ASSIGN_OR_RETURN(x_, DeviceBuffer::allocate(fp16_bytes(T, d), "normed activations"));
  CROSSPOINT_ASSIGN_OR_RETURN(qkv_, DeviceBuffer::allocate(fp16_bytes(T, qkv_width), "qkv"));
  CROSSPOINT_ASSIGN_OR_RETURN(attn_, DeviceBuffer::allocate(fp16_bytes(T, H * D), "attention output"));
  CROSSPOINT_ASSIGN_OR_RETURN(delta_, DeviceBuffer::allocate(fp16_bytes(T, d), "layer output"));
  CROSSPOINT_ASSIGN_OR_RETURN(gate_up_, DeviceBuffer::allocate(fp16_bytes(T, 2 * I), "gate_up"));
  CROSSPOINT_ASSIGN_OR_RETURN(act_, DeviceBuffer::allocate(fp16_bytes(T, I), "mlp activations"));
  CROSSPOINT_ASSIGN_OR_RETURN(head_in_, DeviceBuffer::allocate(fp16_bytes(R, d), "lm_head input"));
  CROSSPOINT_ASSIGN_OR_RETURN(logits_, DeviceBuffer::allocate(fp16_bytes(R, V), "logits"));
  if (o.share != nullptr) {
    const int64_t ranks = o.comm->world_size(), stride = (V + ranks - 1) / ranks;
    if (vocab_begin_ != o.rank * stride || vocab_end_ - vocab_begin_ > stride)
      return invalid_argument("cuda model: rank " + std::to_string(o.rank) + "'s vocabulary rows are not its run of " +
                              std::to_string(stride) + " (plan_tensor_parallel's)");
    CROSSPOINT_ASSIGN_OR_RETURN(head_out_, DeviceBuffer::allocate(fp16_bytes(R, stride), "the rank's logits"));
    CROSSPOINT_ASSIGN_OR_RETURN(gathered_logits_,
                                DeviceBuffer::allocate(fp16_bytes(ranks * R, stride), "the ranks' gathered logits"));
  }
  CROSSPOINT_ASSIGN_OR_RETURN(attention_workspace_, DeviceBuffer::allocate(cuda_paged_attention_workspace_bytes(
                                                                               static_cast<int>(T), static_cast<int>(H),
                                                                               static_cast<int>(D), o.max_model_len),
                                                                           "attention workspace"));
  // Its split counters must start at zero (each attention launch leaves them zero).
  if (attention_workspace_.bytes() > 0)
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemset(attention_workspace_.as(), 0, attention_workspace_.bytes()),
                                    "cudaMemset");

  // Scratch of the quantised linears, sized for the widest layer that needs it.
  int64_t fp8_max_k = 0 /* fp8, fp8-block and int8 */, perm_max_k = 0, fp8_max_n = 0, w4a16_max_weight = 0,
          int8_max_n = 0, block_max_k = 0;
  bool fp8_epilogue = false;
  for (const Layer& l : layers_) {
    for (const CudaLinear* lin : {&l.qkv, &l.o_proj, &l.gate_up, &l.down_proj}) {
      if (lin->format == CudaLinearFormat::kInt8) {  // shares the fp8 activation buffers
        fp8_max_k = std::max<int64_t>(fp8_max_k, lin->in_features);
        int8_max_n = std::max<int64_t>(int8_max_n, lin->out_features);
        // Refused here, not at the first request: a GPU or cuBLAS without the int8 GEMM.
        for (int m : {1, static_cast<int>(slab), static_cast<int>(T)}) {
          if (m > T || (o.batch_invariant && m != slab)) continue;
          if (!int8_gemm_available(*cublas_, m, lin->out_features, lin->in_features))
            return unsupported(lin->name + ": cuBLASLt has no int8 GEMM for " + std::to_string(m) + " x " +
                               std::to_string(lin->out_features) + " x " + std::to_string(lin->in_features) +
                               " on this GPU (N and K must be multiples of 4); W8A8-INT8 runs on the CPU "
                               "(--device cpu)");
        }
      }
      if (lin->format == CudaLinearFormat::kFp8Block) {
        fp8_max_k = std::max<int64_t>(fp8_max_k, lin->in_features);
        block_max_k = std::max<int64_t>(block_max_k, lin->in_features);
        // Refused here, not at the first request: a GPU or cuBLAS without block-scaled FP8.
        for (int m : {1, static_cast<int>(slab), static_cast<int>(T)}) {
          if (m > T || (o.batch_invariant && m != slab)) continue;
          if (!fp8_block_gemm_available(*cublas_, fp8_block_padded_rows(m), lin->out_features, lin->in_features))
            return unsupported(lin->name + ": cuBLASLt has no block-scaled FP8 GEMM for " + std::to_string(m) + " x " +
                               std::to_string(lin->out_features) + " x " + std::to_string(lin->in_features) +
                               " on this GPU (it needs compute capability 9.0 and cuBLAS 12.9 or later); "
                               "block-wise FP8 runs on the CPU (--device cpu)");
        }
      }
      if (lin->format == CudaLinearFormat::kFp8) {
        fp8_max_k = std::max<int64_t>(fp8_max_k, lin->in_features);
        fp8_max_n = std::max<int64_t>(fp8_max_n, lin->out_features);
        for (int m : {3, 16, static_cast<int>(slab), static_cast<int>(T)}) {
          if (m > T || (o.batch_invariant && m != slab)) continue;
          CROSSPOINT_ASSIGN_OR_RETURN(Fp8ScalePath path,
                                      fp8_scale_path(*cublas_, m, lin->out_features, lin->in_features, lin->in_features,
                                                     lin->in_features, lin->out_features));
          fp8_epilogue = fp8_epilogue || path == Fp8ScalePath::kEpilogue;
        }
      }
      if (lin->format == CudaLinearFormat::kW4A16 && !lin->k_perm.empty())
        perm_max_k = std::max<int64_t>(perm_max_k, lin->in_features);
      if (lin->format == CudaLinearFormat::kW4A16)
        w4a16_max_weight = std::max<int64_t>(w4a16_max_weight, int64_t{lin->in_features} * lin->out_features);
    }
  }
  CROSSPOINT_ASSIGN_OR_RETURN(xq_, DeviceBuffer::allocate(static_cast<size_t>(T) * fp8_max_k, "quantised activations"));
  CROSSPOINT_ASSIGN_OR_RETURN(
      x_scale_, DeviceBuffer::allocate(fp8_max_k > 0 ? static_cast<size_t>(T) * 4 : 0, "activation scales"));
  if (fp8_epilogue) {
    CROSSPOINT_ASSIGN_OR_RETURN(
        fp8_epilogue_, DeviceBuffer::allocate(fp8_gemm_scratch_bytes(static_cast<int>(T), static_cast<int>(fp8_max_n)),
                                              "fp8 epilogue scratch"));
  }
  CROSSPOINT_ASSIGN_OR_RETURN(group_x_scale_, DeviceBuffer::allocate(static_cast<size_t>(T) * (block_max_k / 128) * 4,
                                                                     "activation group scales"));
  CROSSPOINT_ASSIGN_OR_RETURN(
      int8_sums_, DeviceBuffer::allocate(int8_gemm_scratch_bytes(static_cast<int>(T), static_cast<int>(int8_max_n)),
                                         "int8 GEMM sums"));
  CROSSPOINT_ASSIGN_OR_RETURN(x_perm_, DeviceBuffer::allocate(fp16_bytes(T, perm_max_k), "act-order activations"));
  // Only steps of kW4A16DequantMinRows rows use it; batch-invariant slabs never have that many.
  if (!o.batch_invariant && T >= kW4A16DequantMinRows) {
    CROSSPOINT_ASSIGN_OR_RETURN(w4a16_weight_fp16_,
                                DeviceBuffer::allocate(fp16_bytes(1, w4a16_max_weight), "w4a16 weights as fp16"));
  }
  scratch_.cublas = cublas_.get();
  scratch_.xq = xq_.as<uint8_t>();
  scratch_.x_scale = x_scale_.as<float>();
  scratch_.fp8_epilogue = fp8_epilogue_.as<float>();
  scratch_.int8_sums = int8_sums_.as<int32_t>();
  scratch_.group_x_scale = group_x_scale_.as<float>();
  scratch_.x_perm = x_perm_.as<uint16_t>();
  scratch_.w4a16_weight_fp16 = w4a16_weight_fp16_.as<uint16_t>();
  scratch_.slab_rows = o.batch_invariant ? kBatchInvariantRows : 0;
  return Status::ok();
}

KvCacheShape CudaModel::kv_cache_shape(int32_t num_blocks) const {
  KvCacheShape shape;
  shape.num_layers = static_cast<int32_t>(config_.num_hidden_layers);
  shape.num_blocks = num_blocks;
  shape.block_size = options_.block_size;
  shape.num_kv_heads = static_cast<int32_t>(kv_heads_);
  shape.head_dim = static_cast<int32_t>(config_.head_dim);
  shape.dtype = options_.kv_fp8 ? DType::kF8E4M3 : options_.activation_dtype;
  return shape;
}

Result<CudaKvCache> CudaModel::make_kv_cache(int32_t num_blocks) const {
  return CudaKvCache::allocate(kv_cache_shape(num_blocks));
}

Result<StepInputStaging> CudaModel::make_step_inputs() const {
  return StepInputStaging::allocate(capacity_, vocab_size_);
}

// One step at the largest shape the engine may send (max_num_tokens tokens in sequences of
// up to max_model_len, max_num_logits logits rows), on a temporary KV cache just big enough
// for it, so that lazily loaded kernels, cuBLASLt plans and every buffer are in place before
// free memory is measured.
Status CudaModel::profile_step() {
  const CudaModelOptions& o = options_;
  const int32_t seq_len = std::min(o.max_model_len, o.max_num_tokens);
  const int32_t num_seqs = std::min(o.max_num_seqs, (o.max_num_tokens + seq_len - 1) / seq_len);
  const int32_t blocks_per_seq = (seq_len + o.block_size - 1) / o.block_size;
  // Both freed when this returns, before create() measures what is free.
  CROSSPOINT_ASSIGN_OR_RETURN(CudaKvCache kv, make_kv_cache(num_seqs * blocks_per_seq));
  CROSSPOINT_ASSIGN_OR_RETURN(StepInputStaging inputs, make_step_inputs());
  HostForwardBatch batch;
  batch.clear(blocks_per_seq);
  std::vector<int32_t> tokens, table_row(blocks_per_seq);
  int32_t remaining = o.max_num_tokens;
  for (int32_t s = 0; s < num_seqs && remaining > 0; ++s) {
    const int32_t len = std::min(seq_len, remaining);
    tokens.clear();
    for (int32_t t = 0; t < len; ++t) tokens.push_back((s * 7919 + t) % vocab_size_);
    for (int32_t b = 0; b < blocks_per_seq; ++b) table_row[b] = s * blocks_per_seq + b;
    batch.add_sequence(tokens, /*num_cached=*/0, table_row);
    remaining -= len;
  }
  const int32_t num_tokens = batch.num_tokens();
  for (int32_t r = 0; r < std::min(o.max_num_logits, num_tokens); ++r) batch.add_logits_row(num_tokens - 1 - r);
  CROSSPOINT_ASSIGN_OR_RETURN(CudaForwardBatch device,
                              inputs.upload(batch.view(), kv, blocks_per_seq, num_tokens, stream_));
  device.shape.max_context_len = o.max_model_len;  // the bound graphs use
  CROSSPOINT_RETURN_IF_ERROR(forward(device, kv));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "profile step");
  return Status::ok();
}

Status CudaModel::agree_over_ranks(const Status& mine) {
  float failed = mine.is_ok() ? 0.0f : 1.0f;
  Status joined =
      cudaMemcpyAsync(rank_flag_.as(), &failed, sizeof(float), cudaMemcpyHostToDevice, stream_) == cudaSuccess
          ? Status::ok()
          : internal_error("cuda model: copying the rank agreement failed");
  // Joined whatever failed above: the other ranks are waiting in this sum.
  const Status summed = options_.comm->all_reduce_sum(options_.rank, rank_flag_.as(), 1, DType::kF32, stream_);
  if (joined.is_ok() && summed.is_ok() &&
      (cudaMemcpyAsync(&failed, rank_flag_.as(), sizeof(float), cudaMemcpyDeviceToHost, stream_) != cudaSuccess ||
       cudaStreamSynchronize(stream_) != cudaSuccess))
    joined = internal_error("cuda model: reading the rank agreement failed");
  if (!mine.is_ok()) return mine;
  CROSSPOINT_RETURN_IF_ERROR(joined);
  CROSSPOINT_RETURN_IF_ERROR(summed);
  if (failed > 0)
    return unavailable("cuda model: rank " + std::to_string(options_.rank) +
                       " is ready but another rank failed to load (that rank's error says why)");
  return Status::ok();
}

Status CudaModel::split_lm_head(const uint16_t* head, int R) {
  const int d = static_cast<int>(config_.hidden_size), ranks = options_.comm->world_size();
  const int64_t stride = (vocab_size_ + ranks - 1) / ranks;  // the plan's run a rank (the last may be shorter)
  const int own = static_cast<int>(vocab_end_ - vocab_begin_);
  CROSSPOINT_RETURN_IF_ERROR(for_each_row_slab(R, scratch_.slab_rows, [&](int first, int rows) {
    return fp16_linear(*cublas_, head_in_.as<uint16_t>() + static_cast<int64_t>(first) * d, d, head, d,
                       head_out_.as<uint16_t>() + first * stride, stride, rows, own, d, stream_,
                       options_.activation_dtype);
  }));
  CROSSPOINT_RETURN_IF_ERROR(options_.comm->all_gather(options_.rank, head_out_.as(), gathered_logits_.as(), R * stride,
                                                       options_.activation_dtype, stream_));
  for (int r = 0; r < ranks; ++r) {  // rank r's [R, stride] block into its columns of [R, vocab]
    const int64_t begin = r * stride, width = std::min<int64_t>(stride, vocab_size_ - begin);
    if (width <= 0) continue;
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpy2DAsync(logits_.as<uint16_t>() + begin, static_cast<size_t>(vocab_size_) * 2,
                          gathered_logits_.as<uint16_t>() + static_cast<int64_t>(r) * R * stride,
                          static_cast<size_t>(stride) * 2, static_cast<size_t>(width) * 2, R, cudaMemcpyDeviceToDevice,
                          stream_),
        "lay out the gathered logits");
  }
  return Status::ok();
}

Status CudaModel::sum_over_ranks(void* data, int64_t n) {
  if (options_.comm == nullptr) return Status::ok();
  return options_.comm->all_reduce_sum(options_.rank, data, n, options_.activation_dtype, stream_);
}

Status CudaModel::embed(const CudaForwardBatch& b) {
  return embedding_gather(embed_tokens_.as<uint16_t>(), b.token_ids, residual_.as<float>(), b.shape.num_tokens,
                          static_cast<int>(config_.hidden_size), vocab_size_, stream_, options_.activation_dtype);
}

size_t CudaModel::residual_stream_bytes(int32_t num_tokens) const {
  return static_cast<size_t>(num_tokens) * static_cast<size_t>(config_.hidden_size) * (sizeof(float) + 2);
}

Status CudaModel::save_residual_stream(void* dst, int32_t num_tokens) const {
  if (num_tokens > options_.max_num_tokens) return invalid_argument("cuda model: more tokens than a step holds");
  const size_t residual = static_cast<size_t>(num_tokens) * config_.hidden_size * sizeof(float);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, residual_.as(), residual, cudaMemcpyDeviceToDevice, stream_),
                                  "save the residual");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(static_cast<char*>(dst) + residual, delta_.as(), residual / 2, cudaMemcpyDeviceToDevice, stream_),
      "save the layer output");
  return Status::ok();
}

Status CudaModel::load_residual_stream(const void* src, int32_t num_tokens) {
  if (num_tokens > options_.max_num_tokens) return invalid_argument("cuda model: more tokens than a step holds");
  const size_t residual = static_cast<size_t>(num_tokens) * config_.hidden_size * sizeof(float);
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(residual_.as(), src, residual, cudaMemcpyDeviceToDevice, stream_),
                                  "load the residual");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(delta_.as(), static_cast<const char*>(src) + residual, residual / 2,
                                                  cudaMemcpyDeviceToDevice, stream_),
                                  "load the layer output");
  return Status::ok();
}

CudaLinear& CudaModel::layer_linear(int32_t layer_idx, LayerLinear which) {
  Layer& l = layers_.at(static_cast<size_t>(layer_idx));
  switch (which) {
    case LayerLinear::kQkv: return l.qkv;
    case LayerLinear::kOProj: return l.o_proj;
    case LayerLinear::kGateUp: return l.gate_up;
    case LayerLinear::kDownProj: break;
  }
  return l.down_proj;
}

Status CudaModel::run_layer(int32_t layer_idx, const CudaForwardBatch& b, const CudaKvCache& kv,
                            const LayerProbe* probe) {
  const ModelConfig& c = config_;
  const Layer& l = layers_[layer_idx];
  const int T = b.shape.num_tokens, d = static_cast<int>(c.hidden_size), I = static_cast<int>(intermediate_);
  const int H = static_cast<int>(heads_), Hkv = static_cast<int>(kv_heads_);
  const int D = static_cast<int>(c.head_dim);
  const float eps = static_cast<float>(c.rms_norm_eps);
  const DType dtype = options_.activation_dtype;
  const int qkv_width = (H + 2 * Hkv) * D;
  uint16_t* x = x_.as<uint16_t>();
  uint16_t* delta = delta_.as<uint16_t>();

  // A W8A8 linear's input, quantised by the step that writes it (none: the linear quantises it).
  // Up to kFp8InputFusedMaxTokens rows; above, the separate quantisation measured faster.
  // Either way the bits are the same, so batch invariance holds.
  auto fp8_input = [&](const CudaLinear& next, const uint16_t* input) {
    return options_.fuse_fp8_input && T <= kFp8InputFusedMaxTokens &&
                   cuda_linear_takes_fp8_rows(next, scratch_, input, T)
               ? Fp8Rows{scratch_.xq, next.in_features, scratch_.x_scale}
               : Fp8Rows{};
  };
  auto linear = [&](const CudaLinear& lin, const Fp8Rows& fp8, const uint16_t* input, uint16_t* out) {
    return fp8.wanted() ? run_cuda_linear_fp8(lin, scratch_, T, out, stream_)
                        : run_cuda_linear(lin, scratch_, input, T, out, stream_);
  };

  // The previous layer's down_proj output joins the residual here (none before layer 0).
  const Fp8Rows qkv_fp8 = fp8_input(l.qkv, x);
  CROSSPOINT_RETURN_IF_ERROR(add_rms_norm(residual_.as<float>(), layer_idx == 0 ? nullptr : delta, d,
                                          l.input_norm.as<uint16_t>(), eps, x, d, T, d, stream_, qkv_fp8, dtype));
  mark(StepOp::kInputNorm);
  if (probe != nullptr && probe->stop_before == LayerLinear::kQkv) return probe->observe(x, T);
  CROSSPOINT_RETURN_IF_ERROR(linear(l.qkv, qkv_fp8, x, qkv_.as<uint16_t>()));
  mark(StepOp::kQkvProj);
  if (!l.q_norm.empty())  // Qwen3; profiled as part of rope_kv_write
    CROSSPOINT_RETURN_IF_ERROR(qk_head_rms_norm(qkv_.as<uint16_t>(), qkv_width, T, H, Hkv, D, l.q_norm.as<uint16_t>(),
                                                l.k_norm.as<uint16_t>(), eps, stream_, dtype));

  RopeKvWriteArgs rope;
  rope.qkv = qkv_.as<uint16_t>();
  rope.qkv_stride = qkv_width;
  rope.bias = l.qkv.bias.empty() ? nullptr : l.qkv.bias.as<uint16_t>();
  rope.positions = b.positions;
  rope.inv_freq = rope_inv_freq_.as<float>();
  rope.attention_scaling = rope_attention_scaling_;
  rope.slot_mapping = b.slot_mapping;
  if (options_.kv_fp8) {
    rope.key_cache_fp8 = static_cast<uint8_t*>(kv.key_cache(layer_idx));
    rope.value_cache_fp8 = static_cast<uint8_t*>(kv.value_cache(layer_idx));
    rope.k_scale = l.k_scale;
    rope.v_scale = l.v_scale;
  } else {
    rope.key_cache = static_cast<uint16_t*>(kv.key_cache(layer_idx));
    rope.value_cache = static_cast<uint16_t*>(kv.value_cache(layer_idx));
  }
  rope.num_tokens = T;
  rope.num_heads = H;
  rope.num_kv_heads = Hkv;
  rope.head_dim = D;
  rope.block_size = options_.block_size;
  rope.num_blocks = kv.num_blocks();
  rope.dtype = dtype;
  CROSSPOINT_RETURN_IF_ERROR(rope_kv_write(rope, stream_));
  mark(StepOp::kRopeKvWrite);

  CudaPagedAttentionArgs attn;
  attn.query = qkv_.as<uint16_t>();
  attn.query_stride = qkv_width;
  attn.output = attn_.as<uint16_t>();
  attn.output_stride = static_cast<int64_t>(H) * D;
  if (options_.kv_fp8) {
    attn.key_cache_fp8 = static_cast<const uint8_t*>(kv.key_cache(layer_idx));
    attn.value_cache_fp8 = static_cast<const uint8_t*>(kv.value_cache(layer_idx));
    attn.k_scale = l.k_scale;
    attn.v_scale = l.v_scale;
  } else {
    attn.key_cache = static_cast<const uint16_t*>(kv.key_cache(layer_idx));
    attn.value_cache = static_cast<const uint16_t*>(kv.value_cache(layer_idx));
  }
  attn.block_tables = b.block_tables;
  attn.seq_token_start = b.seq_token_start;
  attn.seq_context_len = b.seq_context_len;
  attn.num_seqs = b.shape.num_seqs;
  attn.num_tokens = T;
  attn.max_blocks_per_seq = b.shape.block_table_stride;
  attn.max_query_len = b.shape.max_query_len;
  attn.max_context_len = b.shape.max_context_len;
  attn.num_heads = H;
  attn.num_kv_heads = Hkv;
  attn.head_dim = D;
  attn.block_size = options_.block_size;
  attn.scale = 1.0f / std::sqrt(static_cast<float>(D));
  attn.workspace = attention_workspace_.as();
  attn.workspace_bytes = attention_workspace_.bytes();
  attn.batch_invariant = options_.batch_invariant;
  attn.dtype = dtype;
  CROSSPOINT_RETURN_IF_ERROR(cuda_paged_attention(attn, stream_));
  mark(StepOp::kAttention);

  if (probe != nullptr && probe->stop_before == LayerLinear::kOProj) return probe->observe(attn_.as<uint16_t>(), T);
  CROSSPOINT_RETURN_IF_ERROR(run_cuda_linear(l.o_proj, scratch_, attn_.as<uint16_t>(), T, delta, stream_));
  CROSSPOINT_RETURN_IF_ERROR(sum_over_ranks(delta, static_cast<int64_t>(T) * d));
  mark(StepOp::kOProj);
  const Fp8Rows gate_up_fp8 = fp8_input(l.gate_up, x);
  CROSSPOINT_RETURN_IF_ERROR(add_rms_norm(residual_.as<float>(), delta, d, l.post_attention_norm.as<uint16_t>(), eps, x,
                                          d, T, d, stream_, gate_up_fp8, dtype));
  mark(StepOp::kPostAttentionNorm);
  if (probe != nullptr && probe->stop_before == LayerLinear::kGateUp) return probe->observe(x, T);
  CROSSPOINT_RETURN_IF_ERROR(linear(l.gate_up, gate_up_fp8, x, gate_up_.as<uint16_t>()));
  mark(StepOp::kGateUpProj);
  const Fp8Rows down_fp8 = fp8_input(l.down_proj, act_.as<uint16_t>());
  CROSSPOINT_RETURN_IF_ERROR(
      silu_mul(gate_up_.as<uint16_t>(), 2 * I, act_.as<uint16_t>(), I, T, I, stream_, down_fp8, dtype));
  mark(StepOp::kSiluMul);
  if (probe != nullptr && probe->stop_before == LayerLinear::kDownProj) return probe->observe(act_.as<uint16_t>(), T);
  CROSSPOINT_RETURN_IF_ERROR(linear(l.down_proj, down_fp8, act_.as<uint16_t>(), delta));
  CROSSPOINT_RETURN_IF_ERROR(sum_over_ranks(delta, static_cast<int64_t>(T) * d));
  mark(StepOp::kDownProj);
  return Status::ok();
}

Status CudaModel::forward(const CudaForwardBatch& b, CudaKvCache& kv) {
  const int T = b.shape.num_tokens, R = b.shape.num_logits, d = static_cast<int>(config_.hidden_size);
  if (T == 0) return Status::ok();
  if (kv.empty()) return internal_error("cuda model: forward without a KV cache");
  const KvCacheShape want = kv_cache_shape(kv.num_blocks()), &have = kv.shape();
  if (have.num_layers != want.num_layers || have.block_size != want.block_size ||
      have.num_kv_heads != want.num_kv_heads || have.head_dim != want.head_dim || have.dtype != want.dtype)
    return invalid_argument(
        "cuda model: the KV cache was not made for this model (layers, block size, kv heads, "
        "head_dim or dtype differ)");
  if (profiler_ != nullptr) CROSSPOINT_RETURN_IF_ERROR(profiler_->begin_step(stream_));
  CROSSPOINT_RETURN_IF_ERROR(embed(b));
  mark(StepOp::kEmbedding);
  for (int32_t i = 0; i < static_cast<int32_t>(layers_.size()); ++i) CROSSPOINT_RETURN_IF_ERROR(run_layer(i, b, kv));
  if (R == 0) return Status::ok();
  // Final norm over every row (the last down_proj joins the residual), then only the rows
  // whose logits are wanted go through the head.
  CROSSPOINT_RETURN_IF_ERROR(add_rms_norm(residual_.as<float>(), layers_.empty() ? nullptr : delta_.as<uint16_t>(), d,
                                          final_norm_.as<uint16_t>(), static_cast<float>(config_.rms_norm_eps),
                                          x_.as<uint16_t>(), d, T, d, stream_, {}, options_.activation_dtype));
  CROSSPOINT_RETURN_IF_ERROR(
      gather_rows(x_.as<uint16_t>(), d, b.logits_token_idx, head_in_.as<uint16_t>(), R, d, stream_));
  mark(StepOp::kFinalNormGather);
  const uint16_t* head = lm_head_.empty() ? embed_tokens_.as<uint16_t>() : lm_head_.as<uint16_t>();
  if (options_.share != nullptr) {
    CROSSPOINT_RETURN_IF_ERROR(split_lm_head(head, R));
  } else {
    CROSSPOINT_RETURN_IF_ERROR(for_each_row_slab(R, scratch_.slab_rows, [&](int first, int rows) {
      return fp16_linear(*cublas_, head_in_.as<uint16_t>() + static_cast<int64_t>(first) * d, d, head, d,
                         logits_.as<uint16_t>() + static_cast<int64_t>(first) * vocab_size_, vocab_size_, rows,
                         vocab_size_, d, stream_, options_.activation_dtype);
    }));
  }
  mark(StepOp::kLmHead);
  return Status::ok();
}

Status CudaModel::forward_host(const ForwardBatch& batch, CudaKvCache& kv, StepInputStaging& inputs,
                               float* logits_out) {
  CROSSPOINT_ASSIGN_OR_RETURN(CudaForwardBatch device,
                              inputs.upload(batch, kv, batch.max_blocks_per_seq, batch.num_tokens(), stream_));
  CROSSPOINT_RETURN_IF_ERROR(forward(device, kv));
  const size_t n = static_cast<size_t>(device.shape.num_logits) * vocab_size_;
  std::vector<uint16_t> half(n);
  if (n > 0)
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(half.data(), logits(), n * 2, cudaMemcpyDeviceToHost, stream_),
                                    "copy logits");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "forward");
  const bool bf16 = options_.activation_dtype == DType::kBF16;
  for (size_t i = 0; i < n; ++i) logits_out[i] = bf16 ? bf16_to_f32(half[i]) : f16_to_f32(half[i]);  // exact
  return Status::ok();
}

}  // namespace crosspoint::cuda
