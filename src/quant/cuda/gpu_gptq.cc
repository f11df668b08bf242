#include "quant/cuda/gpu_gptq.h"

#include <cublas_v2.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "common/dtype.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gptq.h"

namespace crosspoint {
namespace {

constexpr int64_t kCholeskyBlock = 256;  // diagonal block factored on the host

Status cublas_ok(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return internal_error(std::string("cublas: ") + what + ": status " + std::to_string(static_cast<int>(s)));
}

}  // namespace

struct GpuGptq::Impl {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cuda::DeviceBuffer partial;   // [K, K] f32: one batch's X^T X, then the factor U as f32
  cuda::DeviceBuffer hessian;   // [K, K] f64, then the inverse of the Cholesky factor
  cuda::DeviceBuffer work;      // [K, K] f64: the permuted, damped Hessian and its factor
  cuda::DeviceBuffer u_diag;    // [K] f64
  cuda::DeviceBuffer perm;      // [K] int32 of the factor
  cuda::DeviceBuffer identity;  // [K] int32 0..K-1 (RTN)
  cuda::DeviceBuffer dead;      // [K] uint8
  cuda::DeviceBuffer w_t;       // [K, N] f32 checkpoint row order
  cuda::DeviceBuffer w;         // [K, N] f32 quantisation order
  cuda::DeviceBuffer scale;     // [K / G, N] f32
  cuda::DeviceBuffer zero;      // [K / G, N] uint8
  cuda::DeviceBuffer q;         // [K, N] uint8
  cuda::DeviceBuffer g_idx;     // [K] int32
  cuda::DeviceBuffer err;       // [kGptqMaxBlock, N] f32
  cuda::DeviceBuffer loss;      // [N] f64
  size_t held = 0;
  ~Impl() {
    if (cublas != nullptr) cublasDestroy(cublas);
  }
};

GpuGptq::GpuGptq(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuGptq::~GpuGptq() = default;

Result<std::unique_ptr<GpuGptq>> GpuGptq::create(cudaStream_t stream) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return unsupported("GPTQ on the GPU: no CUDA GPU is visible");
  }
  auto impl = std::make_unique<Impl>();
  impl->stream = stream;
  CROSSPOINT_RETURN_IF_ERROR(cublas_ok(cublasCreate(&impl->cublas), "create"));
  CROSSPOINT_RETURN_IF_ERROR(cublas_ok(cublasSetStream(impl->cublas, stream), "set stream"));
  // The default math: fp16 products summed in f32 on the tensor cores, f64 in f64, no TF32.
  CROSSPOINT_RETURN_IF_ERROR(cublas_ok(cublasSetMathMode(impl->cublas, CUBLAS_DEFAULT_MATH), "math mode"));
  return std::unique_ptr<GpuGptq>(new GpuGptq(std::move(impl)));
}

Status GpuGptq::reserve(cuda::DeviceBuffer& buffer, size_t bytes, const char* what) {
  if (buffer.bytes() >= bytes) return Status::ok();
  impl_->held -= buffer.bytes();
  buffer = cuda::DeviceBuffer();
  CROSSPOINT_ASSIGN_OR_RETURN(buffer, cuda::DeviceBuffer::allocate(bytes, std::string("GPTQ ") + what));
  impl_->held += buffer.bytes();
  peak_bytes_ = std::max(peak_bytes_, impl_->held);
  return Status::ok();
}

Status GpuGptq::begin_hessian(int64_t K) {
  if (K <= 0) return invalid_argument("GPTQ on the GPU: a layer input of no features");
  const size_t k2 = static_cast<size_t>(K) * static_cast<size_t>(K);
  CROSSPOINT_RETURN_IF_ERROR(reserve(impl_->partial, k2 * sizeof(float), "Hessian batch"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(impl_->hessian, k2 * sizeof(double), "Hessian"));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(impl_->hessian.as(), 0, k2 * sizeof(double), impl_->stream),
                                  "GPTQ: clear the Hessian");
  hessian_k_ = K;
  factor_k_ = 0;
  return Status::ok();
}

Status GpuGptq::add_rows(const uint16_t* x, int64_t rows) {
  if (hessian_k_ == 0) return internal_error("GPTQ on the GPU: add_rows before begin_hessian");
  if (rows <= 0) return Status::ok();
  const int K = static_cast<int>(hessian_k_);
  const float one = 1.0f, zero = 0.0f;
  // Column-major, x is X^T [K, rows]: partial = X^T X.
  CROSSPOINT_RETURN_IF_ERROR(cublas_ok(
      cublasGemmEx(impl_->cublas, CUBLAS_OP_N, CUBLAS_OP_T, K, K, static_cast<int>(rows), &one, x, CUDA_R_16F, K, x,
                   CUDA_R_16F, K, &zero, impl_->partial.as(), CUDA_R_32F, K, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "Hessian X^T X"));
  return cuda::gptq_add_to_hessian(impl_->partial.as<float>(), impl_->hessian.as<double>(), hessian_k_ * hessian_k_,
                                   impl_->stream);
}

Status GpuGptq::factor(const Int4QuantOptions& options) {
  if (hessian_k_ == 0) return internal_error("GPTQ on the GPU: factor before begin_hessian");
  const Status s = factor_device(options);
  if (!s.is_ok()) factor_k_ = 0;
  return s;
}

Status GpuGptq::factor_device(const Int4QuantOptions& options) {
  Impl& m = *impl_;
  const int64_t K = hessian_k_;
  const size_t k2 = static_cast<size_t>(K) * static_cast<size_t>(K);
  // Dead features, act-order and damping from the diagonal, on the host as gptq_factor_hessian.
  std::vector<double> diag(static_cast<size_t>(K));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpy2DAsync(diag.data(), sizeof(double), m.hessian.as(), (K + 1) * sizeof(double), sizeof(double), K,
                        cudaMemcpyDeviceToHost, m.stream),
      "GPTQ: Hessian diagonal");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(m.stream), "GPTQ: Hessian");
  std::vector<uint8_t> dead(static_cast<size_t>(K), 0);
  for (int64_t k = 0; k < K; ++k) {
    if (diag[k] == 0.0) {
      dead[k] = 1;
      diag[k] = 1.0;
    }
  }
  std::vector<int32_t> perm(static_cast<size_t>(K));
  std::iota(perm.begin(), perm.end(), 0);
  if (options.act_order)
    std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) { return diag[a] > diag[b]; });
  double mean_diag = 0.0;
  for (int64_t k = 0; k < K; ++k) mean_diag += diag[k];
  const double damp = options.damp_percent * mean_diag / K;

  CROSSPOINT_RETURN_IF_ERROR(reserve(m.work, k2 * sizeof(double), "Cholesky"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.perm, K * sizeof(int32_t), "order"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.dead, K, "dead features"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.u_diag, K * sizeof(double), "factor diagonal"));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(m.perm.as(), perm.data(), K * sizeof(int32_t), cudaMemcpyHostToDevice, m.stream), "GPTQ: order");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(m.dead.as(), dead.data(), K, cudaMemcpyHostToDevice, m.stream),
                                  "GPTQ: dead features");
  double* a = m.work.as<double>();
  CROSSPOINT_RETURN_IF_ERROR(
      cuda::gptq_reversed_permuted_hessian(m.hessian.as<double>(), m.perm.as<int32_t>(), damp, K, a, m.stream));

  // Blocked Cholesky. a is symmetric, so its row-major lower triangle (the host's) is the
  // column-major upper one cuBLAS is told about: a = U^T U with U column-major upper = L^T.
  const double one = 1.0, minus_one = -1.0;
  std::vector<double> block;
  for (int64_t k0 = 0; k0 < K; k0 += kCholeskyBlock) {
    const int64_t kb = std::min(kCholeskyBlock, K - k0);
    double* a11 = a + k0 * K + k0;
    block.resize(static_cast<size_t>(kb * kb));
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(block.data(), kb * sizeof(double), a11, K * sizeof(double),
                                                      kb * sizeof(double), kb, cudaMemcpyDeviceToHost, m.stream),
                                    "GPTQ: Cholesky block");
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(m.stream), "GPTQ: Cholesky");
    if (!cholesky_lower(block, kb))
      return invalid_argument("gptq: the damped Hessian is not positive definite; raise damp_percent");
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(a11, K * sizeof(double), block.data(), kb * sizeof(double),
                                                      kb * sizeof(double), kb, cudaMemcpyHostToDevice, m.stream),
                                    "GPTQ: Cholesky block");
    const int64_t rest = K - k0 - kb;
    if (rest == 0) break;
    double* a12 = a + (k0 + kb) * K + k0;
    double* a22 = a + (k0 + kb) * K + k0 + kb;
    CROSSPOINT_RETURN_IF_ERROR(cublas_ok(cublasDtrsm(m.cublas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T,
                                                     CUBLAS_DIAG_NON_UNIT, static_cast<int>(kb), static_cast<int>(rest),
                                                     &one, a11, static_cast<int>(K), a12, static_cast<int>(K)),
                                         "Cholesky panel"));
    CROSSPOINT_RETURN_IF_ERROR(cublas_ok(
        cublasDsyrk(m.cublas, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, static_cast<int>(rest), static_cast<int>(kb),
                    &minus_one, a12, static_cast<int>(K), &one, a22, static_cast<int>(K)),
        "Cholesky update"));
  }
  // The inverse of the factor: column-major U X = I, whose row-major reading is L^-1. The
  // Hessian's buffer is free now and takes it.
  double* inv = m.hessian.as<double>();
  CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_set_identity(inv, K, m.stream));
  CROSSPOINT_RETURN_IF_ERROR(cublas_ok(
      cublasDtrsm(m.cublas, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT,
                  static_cast<int>(K), static_cast<int>(K), &one, a, static_cast<int>(K), inv, static_cast<int>(K)),
      "inverse factor"));
  CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_upper_factor(inv, K, m.partial.as<float>(), m.u_diag.as<double>(), m.stream));
  hessian_k_ = 0;  // the Hessian's buffer now holds the inverse
  factor_k_ = K;
  return Status::ok();
}

Status GpuGptq::set_factor(const GptqHessianFactor& f) {
  Impl& m = *impl_;
  const int64_t K = f.num_features;
  const size_t k2 = static_cast<size_t>(K) * static_cast<size_t>(K);
  if (K <= 0 || f.perm.size() != static_cast<size_t>(K) || f.dead.size() != static_cast<size_t>(K) ||
      f.hinv_upper.size() != k2)
    return invalid_argument("GPTQ on the GPU: an inconsistent factor");
  std::vector<float> u(k2);
  std::vector<double> diag(static_cast<size_t>(K));
  for (size_t i = 0; i < k2; ++i) u[i] = static_cast<float>(f.hinv_upper[i]);
  for (int64_t i = 0; i < K; ++i) diag[i] = f.hinv_upper[i * K + i];
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.partial, k2 * sizeof(float), "factor"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.perm, K * sizeof(int32_t), "order"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.dead, K, "dead features"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.u_diag, K * sizeof(double), "factor diagonal"));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(m.partial.as(), u.data(), k2 * sizeof(float), cudaMemcpyHostToDevice),
                                  "GPTQ: factor");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(m.u_diag.as(), diag.data(), K * sizeof(double), cudaMemcpyHostToDevice),
                                  "GPTQ: factor");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(m.perm.as(), f.perm.data(), K * sizeof(int32_t), cudaMemcpyHostToDevice),
                                  "GPTQ: order");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpy(m.dead.as(), f.dead.data(), K, cudaMemcpyHostToDevice),
                                  "GPTQ: dead features");
  hessian_k_ = 0;
  factor_k_ = K;
  return Status::ok();
}

Result<Int4Quantized> GpuGptq::quantize(uint16_t* w_nk, int64_t N, int64_t K, const Int4QuantOptions& options,
                                        bool gptq, bool write_back, std::vector<double>* column_loss) {
  Impl& m = *impl_;
  const int64_t G = options.group_size == -1 ? K : options.group_size;
  CROSSPOINT_RETURN_IF_ERROR(check_int4_shapes(K, N, G));
  const int64_t B = options.block_size;
  if (gptq && (B < 1 || B > cuda::kGptqMaxBlock))
    return invalid_argument("GPTQ on the GPU: a block size of 1 to " + std::to_string(cuda::kGptqMaxBlock) +
                            " columns (got " + std::to_string(B) + ")");
  if (gptq && factor_k_ != K) return internal_error("GPTQ on the GPU: no factor for in_features " + std::to_string(K));
  const size_t kn = static_cast<size_t>(K) * static_cast<size_t>(N), groups = static_cast<size_t>(K / G);
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.w_t, kn * sizeof(float), "weights"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.w, kn * sizeof(float), "weights in order"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.scale, groups * N * sizeof(float), "scales"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.zero, groups * N, "zero points"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.q, kn, "codes"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.g_idx, K * sizeof(int32_t), "g_idx"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.err, cuda::kGptqMaxBlock * N * sizeof(float), "errors"));
  CROSSPOINT_RETURN_IF_ERROR(reserve(m.loss, N * sizeof(double), "loss"));
  cudaStream_t s = m.stream;
  CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_transpose_weight(w_nk, N, K, m.w_t.as<float>(), s));
  if (gptq) {
    CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_gather_rows(m.w_t.as<float>(), m.perm.as<int32_t>(), m.dead.as<uint8_t>(), K,
                                                      N, m.w.as<float>(), s));
  } else {
    CROSSPOINT_RETURN_IF_ERROR(reserve(m.identity, K * sizeof(int32_t), "order"));
    std::vector<int32_t> iota(static_cast<size_t>(K));
    std::iota(iota.begin(), iota.end(), 0);
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(m.identity.as(), iota.data(), K * sizeof(int32_t), cudaMemcpyHostToDevice, s), "GPTQ: order");
    CROSSPOINT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(m.w.as(), m.w_t.as(), kn * sizeof(float), cudaMemcpyDeviceToDevice, s), "GPTQ: weights");
    CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s), "GPTQ: order");  // iota leaves scope
  }
  const bool static_groups = gptq && options.static_groups;
  if (static_groups)
    for (int64_t g = 0; g < K / G; ++g)
      CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_group_params(m.w_t.as<float>(), N, g * G, (g + 1) * G, options.sym,
                                                         m.scale.as<float>() + g * N, m.zero.as<uint8_t>() + g * N, s));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(m.loss.as(), 0, N * sizeof(double), s), "GPTQ: loss");

  cuda::GptqColumnArgs args;
  args.w = m.w.as<float>();
  args.u = gptq ? m.partial.as<float>() : nullptr;
  args.u_diag = gptq ? m.u_diag.as<double>() : nullptr;
  args.perm = gptq ? m.perm.as<int32_t>() : m.identity.as<int32_t>();
  args.K = K;
  args.N = N;
  args.group_size = G;
  args.sym = options.sym;
  args.static_groups = static_groups;
  args.error_feedback = gptq;
  args.group_scale = m.scale.as<float>();
  args.group_zero = m.zero.as<uint8_t>();
  args.q = m.q.as<uint8_t>();
  args.g_idx = m.g_idx.as<int32_t>();
  args.err = m.err.as<float>();
  args.loss = m.loss.as<double>();
  const int64_t step = gptq ? B : cuda::kGptqMaxBlock;
  for (int64_t b0 = 0; b0 < K; b0 += step) {
    const int64_t b1 = std::min(K, b0 + step);
    CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_quantize_block(args, b0, b1, s));
    if (gptq) CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_update_later_rows(args, b0, b1, s));
  }
  if (write_back)
    CROSSPOINT_RETURN_IF_ERROR(cuda::gptq_dequantize_fp16(m.q.as<uint8_t>(), m.g_idx.as<int32_t>(), m.scale.as<float>(),
                                                          m.zero.as<uint8_t>(), K, N, w_nk, s));

  Int4Quantized out;
  out.in_features = K;
  out.out_features = N;
  out.group_size = G;
  out.q.resize(kn);
  out.zeros.resize(groups * N);
  out.g_idx.resize(static_cast<size_t>(K));
  std::vector<float> scales(groups * N);
  std::vector<double> loss(static_cast<size_t>(N));
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.q.data(), m.q.as(), kn, cudaMemcpyDeviceToHost, s),
                                  "GPTQ: codes");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out.zeros.data(), m.zero.as(), groups * N, cudaMemcpyDeviceToHost, s),
                                  "GPTQ: zero points");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(out.g_idx.data(), m.g_idx.as(), K * sizeof(int32_t), cudaMemcpyDeviceToHost, s), "GPTQ: g_idx");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(scales.data(), m.scale.as(), scales.size() * sizeof(float), cudaMemcpyDeviceToHost, s),
      "GPTQ: scales");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(loss.data(), m.loss.as(), loss.size() * sizeof(double), cudaMemcpyDeviceToHost, s), "GPTQ: loss");
  CROSSPOINT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s), "GPTQ: quantise");
  out.scales.resize(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) out.scales[i] = f32_to_f16(scales[i]);  // exact: fp16 values
  for (double l : loss) out.loss += l;
  if (column_loss != nullptr) *column_loss = std::move(loss);
  return out;
}

}  // namespace crosspoint
