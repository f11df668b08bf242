#include "quant/int4_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "common/dtype.h"
#include "common/thread_pool.h"

namespace crosspoint {
namespace {

constexpr int kMaxQ = 15;

struct GroupParams {
  std::vector<float> scale;   // [N] fp16-representable
  std::vector<uint8_t> zero;  // [N]
};

// Parameters of one group from rows [row_begin, row_end) of w_t [K, N].
GroupParams find_group_params(const float* w_t, int64_t N, int64_t row_begin, int64_t row_end, bool sym) {
  GroupParams p{std::vector<float>(N), std::vector<uint8_t>(N)};
  for (int64_t n = 0; n < N; ++n) {
    float lo = 0.0f, hi = 0.0f;
    for (int64_t k = row_begin; k < row_end; ++k) {
      lo = std::min(lo, w_t[k * N + n]);
      hi = std::max(hi, w_t[k * N + n]);
    }
    if (sym) {
      hi = std::max(-lo, hi);
      lo = -hi;
    }
    if (lo == 0.0f && hi == 0.0f) {
      lo = -1.0f;
      hi = 1.0f;
    }
    float scale = f16_to_f32(f32_to_f16((hi - lo) / kMaxQ));
    if (!(scale > 0.0f)) scale = f16_to_f32(0x0001);  // smallest fp16 subnormal
    p.scale[n] = scale;
    p.zero[n] = sym ? static_cast<uint8_t>((kMaxQ + 1) / 2)
                    : static_cast<uint8_t>(std::clamp(std::nearbyint(-lo / scale), 0.0f, float(kMaxQ)));
  }
  return p;
}

inline uint8_t quantize_value(float w, float scale, uint8_t zero) {
  return static_cast<uint8_t>(std::clamp(std::nearbyint(w / scale) + zero, 0.0f, float(kMaxQ)));
}

Int4Quantized make_output(int64_t K, int64_t N, int64_t G) {
  Int4Quantized out;
  out.in_features = K;
  out.out_features = N;
  out.group_size = G;
  out.q.resize(K * N);
  out.scales.resize(K / G * N);
  out.zeros.resize(K / G * N);
  out.g_idx.resize(K);
  return out;
}

void store_group(Int4Quantized& out, int64_t g, const GroupParams& p) {
  const int64_t N = out.out_features;
  for (int64_t n = 0; n < N; ++n) {
    out.scales[g * N + n] = f32_to_f16(p.scale[n]);
    out.zeros[g * N + n] = p.zero[n];
  }
}

// Inverse of the lower-triangular l [n, n]: solves L X = I row by row.
std::vector<double> invert_lower(const std::vector<double>& l, int64_t n) {
  std::vector<double> x(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double* xi = &x[i * n];
    xi[i] = 1.0;
    for (int64_t k = 0; k < i; ++k) {
      const double lik = l[i * n + k];
      if (lik == 0.0) continue;
      const double* xk = &x[k * n];
      for (int64_t c = 0; c <= k; ++c) xi[c] -= lik * xk[c];
    }
    const double inv = 1.0 / l[i * n + i];
    for (int64_t c = 0; c <= i; ++c) xi[c] *= inv;
  }
  return x;
}

}  // namespace

Status check_int4_shapes(int64_t K, int64_t N, int64_t G) {
  if (K <= 0 || N <= 0 || K % 8 != 0 || N % 8 != 0)
    return invalid_argument("int4 quantisation: in_features " + std::to_string(K) + " and out_features " +
                            std::to_string(N) + " must be positive multiples of 8");
  if (G <= 0 || K % G != 0)
    return invalid_argument("int4 quantisation: group size " + std::to_string(G) + " does not divide in_features " +
                            std::to_string(K));
  return Status::ok();
}

bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double* row_j = &a[j * n];
    double d = row_j[j];
    for (int64_t k = 0; k < j; ++k) d -= row_j[k] * row_j[k];
    if (!(d > 0.0)) return false;
    const double ljj = std::sqrt(d);
    row_j[j] = ljj;
    global_thread_pool().parallel_for(
        static_cast<size_t>(n - j - 1),
        [&](size_t b, size_t e) {
          for (int64_t i = j + 1 + static_cast<int64_t>(b); i < j + 1 + static_cast<int64_t>(e); ++i) {
            double* row_i = &a[i * n];
            double s = row_i[j];
            for (int64_t k = 0; k < j; ++k) s -= row_i[k] * row_j[k];
            row_i[j] = s / ljj;
          }
        },
        64);
  }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) a[i * n + j] = 0.0;
  return true;
}

std::vector<float> Int4Quantized::dequantize() const {
  const int64_t K = in_features, N = out_features;
  std::vector<float> w(K * N);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t g = g_idx[k];
      w[k * N + n] = f16_to_f32(scales[g * N + n]) * (static_cast<float>(q[k * N + n]) - zeros[g * N + n]);
    }
  return w;
}

Result<GptqHessianFactor> gptq_factor_hessian(const std::vector<double>& hessian, int64_t K,
                                              const Int4QuantOptions& options) {
  if (static_cast<int64_t>(hessian.size()) != K * K) return invalid_argument("gptq: Hessian size does not match K");
  GptqHessianFactor f;
  f.num_features = K;
  f.dead.assign(K, 0);
  std::vector<double> h = hessian;
  for (int64_t k = 0; k < K; ++k) {
    if (h[k * K + k] == 0.0) {
      f.dead[k] = 1;
      h[k * K + k] = 1.0;
    }
  }
  f.perm.resize(K);
  std::iota(f.perm.begin(), f.perm.end(), 0);
  if (options.act_order)
    std::stable_sort(f.perm.begin(), f.perm.end(), [&](int32_t a, int32_t b) { return h[a * K + a] > h[b * K + b]; });
  double mean_diag = 0.0;
  for (int64_t k = 0; k < K; ++k) mean_diag += h[k * K + k];
  const double damp = options.damp_percent * mean_diag / K;
  // U, the upper Cholesky factor of H^-1 (U^T U = H^-1), from one lower Cholesky of H with its
  // index order reversed: if J H J = M M^T, then H = R R^T with R = J M J upper triangular,
  // so H^-1 = (R^-1)^T R^-1 and U = R^-1 = J M^-1 J.
  std::vector<double> reversed(K * K);  // [K, K] = J P^T H P J (+ damp on the diagonal)
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = 0; j < K; ++j)
      reversed[(K - 1 - i) * K + (K - 1 - j)] =
          h[static_cast<int64_t>(f.perm[i]) * K + f.perm[j]] + (i == j ? damp : 0.0);
  if (!cholesky_lower(reversed, K))
    return invalid_argument("gptq: the damped Hessian is not positive definite; raise damp_percent");
  const std::vector<double> m_inv = invert_lower(reversed, K);
  f.hinv_upper.assign(K * K, 0.0);
  for (int64_t i = 0; i < K; ++i)
    for (int64_t j = i; j < K; ++j) f.hinv_upper[i * K + j] = m_inv[(K - 1 - i) * K + (K - 1 - j)];
  return f;
}

Result<Int4Quantized> rtn_quantize_int4(const float* w_t, int64_t K, int64_t N, const Int4QuantOptions& options) {
  const int64_t G = options.group_size == -1 ? K : options.group_size;
  CROSSPOINT_RETURN_IF_ERROR(check_int4_shapes(K, N, G));
  Int4Quantized out = make_output(K, N, G);
  // Groups are independent: split over the pool; each group's loss is summed in group order
  // afterwards, so the result does not depend on the thread count.
  std::vector<double> group_loss(static_cast<size_t>(K / G), 0.0);
  global_thread_pool().parallel_for(static_cast<size_t>(K / G), [&](size_t begin, size_t end) {
    for (int64_t g = static_cast<int64_t>(begin); g < static_cast<int64_t>(end); ++g) {
      const GroupParams p = find_group_params(w_t, N, g * G, (g + 1) * G, options.sym);
      store_group(out, g, p);
      for (int64_t k = g * G; k < (g + 1) * G; ++k) {
        out.g_idx[k] = static_cast<int32_t>(g);
        for (int64_t n = 0; n < N; ++n) {
          const uint8_t q = quantize_value(w_t[k * N + n], p.scale[n], p.zero[n]);
          out.q[k * N + n] = q;
          const double err = w_t[k * N + n] - p.scale[n] * (static_cast<float>(q) - p.zero[n]);
          group_loss[g] += err * err;
        }
      }
    }
  });
  for (double loss : group_loss) out.loss += loss;
  return out;
}

Result<Int4Quantized> gptq_quantize_int4(const float* w_t_in, int64_t K, int64_t N, const GptqHessianFactor& f,
                                         const Int4QuantOptions& options) {
  const int64_t G = options.group_size == -1 ? K : options.group_size;
  CROSSPOINT_RETURN_IF_ERROR(check_int4_shapes(K, N, G));
  if (f.num_features != K) return invalid_argument("gptq: Hessian factor is for another in_features");
  const int64_t B = std::max<int64_t>(1, options.block_size);
  // w: [K, N] f32 in quantisation (perm) order, updated as errors are compensated.
  std::vector<float> w(K * N);
  for (int64_t i = 0; i < K; ++i) {
    const int64_t src = f.perm[i];
    if (f.dead[src]) std::fill_n(&w[i * N], N, 0.0f);
    else std::copy_n(w_t_in + src * N, N, &w[i * N]);
  }
  Int4Quantized out = make_output(K, N, G);
  const std::vector<double>& U = f.hinv_upper;
  GroupParams params;
  std::vector<GroupParams> static_params;  // [K / G], from the original weights in checkpoint row order
  if (options.static_groups) {
    for (int64_t g = 0; g < K / G; ++g) {
      static_params.push_back(find_group_params(w_t_in, N, g * G, (g + 1) * G, options.sym));
      store_group(out, g, static_params.back());
    }
  }
  std::vector<float> err(B * N);  // [B, N] scaled errors of the current block
  for (int64_t b0 = 0; b0 < K; b0 += B) {
    const int64_t b1 = std::min(K, b0 + B);
    for (int64_t i = b0; i < b1; ++i) {
      const int64_t src = f.perm[i];
      const GroupParams* group = &params;
      if (options.static_groups) {
        group = &static_params[src / G];
        out.g_idx[src] = static_cast<int32_t>(src / G);
      } else {
        if (i % G == 0) {
          params = find_group_params(w.data(), N, i, std::min(K, i + G), options.sym);
          store_group(out, i / G, params);
        }
        out.g_idx[src] = static_cast<int32_t>(i / G);
      }
      const double d = U[i * K + i];
      float* e = &err[(i - b0) * N];
      for (int64_t n = 0; n < N; ++n) {
        const float wv = w[i * N + n];
        const uint8_t q = quantize_value(wv, group->scale[n], group->zero[n]);
        out.q[src * N + n] = q;
        const float deq = group->scale[n] * (static_cast<float>(q) - group->zero[n]);
        e[n] = static_cast<float>((wv - deq) / d);
        out.loss += static_cast<double>(wv - deq) * (wv - deq) / (d * d) / 2.0;
      }
      for (int64_t j = i + 1; j < b1; ++j) {
        const float u = static_cast<float>(U[i * K + j]);
        float* wj = &w[j * N];
        for (int64_t n = 0; n < N; ++n) wj[n] -= u * e[n];
      }
    }
    // Lazy batch update of every later column with this block's errors.
    global_thread_pool().parallel_for(
        static_cast<size_t>(K - b1),
        [&](size_t jb, size_t je) {
          for (int64_t j = b1 + static_cast<int64_t>(jb); j < b1 + static_cast<int64_t>(je); ++j) {
            float* wj = &w[j * N];
            for (int64_t i = b0; i < b1; ++i) {
              const float u = static_cast<float>(U[i * K + j]);
              const float* e = &err[(i - b0) * N];
              for (int64_t n = 0; n < N; ++n) wj[n] -= u * e[n];
            }
          }
        },
        8);
  }
  return out;
}

std::vector<TensorToWrite> pack_gptq_tensors(const Int4Quantized& qz, const std::string& prefix) {
  const int64_t K = qz.in_features, N = qz.out_features, groups = K / qz.group_size;
  auto as_bytes = [](const auto& v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(v[0]));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
  };
  std::vector<uint32_t> qweight(K / 8 * N, 0);  // [K/8, N]
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) qweight[(k / 8) * N + n] |= static_cast<uint32_t>(qz.q[k * N + n]) << (4 * (k % 8));
  std::vector<uint32_t> qzeros(groups * (N / 8), 0);  // [groups, N/8], v1: stores zero - 1
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t n = 0; n < N; ++n)
      qzeros[g * (N / 8) + n / 8] |= static_cast<uint32_t>((qz.zeros[g * N + n] - 1) & 0xF) << (4 * (n % 8));
  std::vector<TensorToWrite> out;
  out.push_back({prefix + ".qweight", DType::kI32, {K / 8, N}, as_bytes(qweight)});
  out.push_back({prefix + ".qzeros", DType::kI32, {groups, N / 8}, as_bytes(qzeros)});
  out.push_back({prefix + ".scales", DType::kF16, {groups, N}, as_bytes(qz.scales)});
  out.push_back({prefix + ".g_idx", DType::kI32, {K}, as_bytes(qz.g_idx)});
  return out;
}

}  // namespace crosspoint
