#include "quant/gptq_calibration.h"

#include <algorithm>

#include "common/log.h"
#include "common/thread_pool.h"
#include "kernels/weight_dtype.h"
#include "quant/tensor_checks.h"

namespace crosspoint {

// One wrapped linear: its float weight until quantised, then a dense f32 copy of the
// dequantised weight that forward() uses.
struct GptqCalibrationSession::Member {
  std::string prefix;
  std::string group_key;
  int64_t in_features = 0;
  int64_t out_features = 0;
  std::vector<float> weight_t;     // [K, N] f32 original weights (freed after quantisation)
  std::vector<float> bias;         // [N] or empty
  std::vector<float> dequantized;  // [N, K] f32 after quantisation
  std::unique_ptr<LinearWeight> quantized_dense;
};

namespace {

std::string group_key_of(const std::string& prefix) {
  const size_t dot = prefix.rfind('.');
  const std::string parent = prefix.substr(0, dot), leaf = prefix.substr(dot + 1);
  if (leaf == "q_proj" || leaf == "k_proj" || leaf == "v_proj") return parent + ".qkv_proj";
  if (leaf == "gate_proj" || leaf == "up_proj") return parent + ".gate_up_proj";
  return prefix;
}

class CalibratingLinear final : public LinearWeight {
 public:
  CalibratingLinear(GptqCalibrationSession* session, std::unique_ptr<GptqCalibrationSession::Member> member)
      : session_(session), member_(std::move(member)) {}
  Status forward(const float* x, int64_t num_rows, int64_t x_row_stride, float* y) const override {
    if (!member_->quantized_dense)
      CROSSPOINT_RETURN_IF_ERROR(session_->quantize_group(member_->group_key, x, num_rows, x_row_stride));
    return member_->quantized_dense->forward(x, num_rows, x_row_stride, y);
  }
  int64_t in_features() const override { return member_->in_features; }
  int64_t out_features() const override { return member_->out_features; }
  size_t weight_bytes() const override { return member_->in_features * member_->out_features / 2; }
  std::string format_name() const override { return "gptq-calibration"; }
  // Before its group is quantised there is no weight yet: an empty dense storage.
  LinearWeightView view() const override {
    return member_->quantized_dense ? member_->quantized_dense->view() : LinearWeightView{};
  }
  GptqCalibrationSession::Member* member() { return member_.get(); }

 private:
  GptqCalibrationSession* session_;
  std::unique_ptr<GptqCalibrationSession::Member> member_;
};

class CalibrationFormat final : public LinearWeightFormat {
 public:
  explicit CalibrationFormat(GptqCalibrationSession* session) : session_(session) {}
  std::string name() const override { return "gptq-calibration"; }
  bool matches(const ModelConfig& config) const override { return config.quantization_config_json.empty(); }
  Result<std::unique_ptr<LinearWeight>> load(const LinearWeightRequest& r) const override {
    if (r.is_lm_head) return load_dense_linear_weight(r);
    CROSSPOINT_ASSIGN_OR_RETURN(
        const TensorInfo* w, require_float_tensor(*r.tensors, r.prefix + ".weight", {r.out_features, r.in_features}));
    auto member = std::make_unique<GptqCalibrationSession::Member>();
    member->prefix = r.prefix;
    member->group_key = group_key_of(r.prefix);
    member->in_features = r.in_features;
    member->out_features = r.out_features;
    const int64_t K = r.in_features, N = r.out_features;
    member->weight_t.resize(static_cast<size_t>(K * N));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) member->weight_t[k * N + n] = load_weight(w->data, w->dtype, n * K + k);
    CROSSPOINT_ASSIGN_OR_RETURN(member->bias, load_bias(r));
    auto layer = std::make_unique<CalibratingLinear>(session_, std::move(member));
    session_->register_member(layer->member()->group_key, layer->member());
    return std::unique_ptr<LinearWeight>(std::move(layer));
  }

 private:
  GptqCalibrationSession* session_;
};

}  // namespace

void accumulate_hessian(const float* x, int64_t num_rows, int64_t stride, int64_t K, std::vector<double>& h) {
  constexpr int64_t kTile = 256;                           // tokens per float partial sum
  std::vector<float> partial(static_cast<size_t>(K * K));  // [K, K] upper triangle used
  for (int64_t t0 = 0; t0 < num_rows; t0 += kTile) {
    const int64_t t1 = std::min(num_rows, t0 + kTile);
    global_thread_pool().parallel_for(
        static_cast<size_t>(K),
        [&](size_t ib, size_t ie) {
          for (int64_t i = static_cast<int64_t>(ib); i < static_cast<int64_t>(ie); ++i) {
            float* row = &partial[i * K];
            std::fill(row + i, row + K, 0.0f);
            for (int64_t t = t0; t < t1; ++t) {
              const float* xt = x + t * stride;
              const float xi = xt[i];
              if (xi == 0.0f) continue;
              for (int64_t j = i; j < K; ++j) row[j] += xi * xt[j];
            }
            for (int64_t j = i; j < K; ++j) h[i * K + j] += row[j];
          }
        },
        8);
  }
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < i; ++j) h[i * K + j] = h[j * K + i];
}

GptqCalibrationSession::GptqCalibrationSession(Int4QuantOptions options, bool method_gptq, int64_t num_layers)
    : options_(options), method_gptq_(method_gptq), num_layers_(num_layers) {}

std::shared_ptr<const LinearWeightFormat> GptqCalibrationSession::format() {
  return std::make_shared<const CalibrationFormat>(this);
}

void GptqCalibrationSession::register_member(const std::string& group_key, Member* member) {
  groups_[group_key].push_back(member);
}

Status GptqCalibrationSession::quantize_group(const std::string& group_key, const float* x, int64_t num_rows,
                                              int64_t stride) {
  if (!status_.is_ok()) return status_;
  std::vector<Member*>& members = groups_[group_key];
  CROSSPOINT_CHECK(!members.empty(), "quantize_group: unknown group " + group_key);
  const int64_t K = members[0]->in_features;
  if (stride == 0) stride = K;
  GptqHessianFactor factor;
  if (method_gptq_) {
    std::vector<double> h(static_cast<size_t>(K * K), 0.0);
    accumulate_hessian(x, num_rows, stride, K, h);
    auto f = gptq_factor_hessian(h, K, options_);
    if (!f.is_ok()) return status_ = Status(f.status().code(), group_key + ": " + f.status().message());
    factor = std::move(f).value();
  }
  for (Member* m : members) {
    auto result = method_gptq_ ? gptq_quantize_int4(m->weight_t.data(), K, m->out_features, factor, options_)
                               : rtn_quantize_int4(m->weight_t.data(), K, m->out_features, options_);
    if (!result.is_ok()) return status_ = Status(result.status().code(), m->prefix + ": " + result.status().message());
    Int4Quantized q = std::move(result).value();
    const std::vector<float> w_t = q.dequantize();  // [K, N]
    const int64_t N = m->out_features;
    m->dequantized.resize(static_cast<size_t>(N * K));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) m->dequantized[n * K + k] = w_t[k * N + n];
    m->quantized_dense = std::make_unique<DenseLinearWeight>(m->dequantized.data(), DType::kF32, N, K, m->bias);
    log_info("quantize: {} ({} x {}) {} loss {:.4g}", m->prefix, N, K, method_gptq_ ? "gptq" : "rtn", q.loss);
    results_[m->prefix] = std::move(q);
    std::vector<float>().swap(m->weight_t);
  }
  ++num_groups_done_;
  const size_t total = static_cast<size_t>(num_layers_) * 4;
  log_info("quantize: {}/{} layer inputs done", num_groups_done_, total);
  return Status::ok();
}

}  // namespace crosspoint
