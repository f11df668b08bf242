// Load-time re-layout of GPTQ int4 weights into the W4A16 kernel's fragment order.
// Layout and nibble order: w4a16_gemm.h.
#include <algorithm>
#include <numeric>
#include <string>

#include "common/thread_pool.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace crosspoint::cuda {
namespace {

// Returns the row order (packed row i = checkpoint row k_perm[i]) that makes every group's
// rows contiguous, an empty vector when g_idx is absent or already k / G, or an error.
Result<std::vector<int32_t>> row_order_from_g_idx(const int32_t* g_idx, int k, int group_size, int num_groups,
                                                  const std::string& name) {
  std::vector<int32_t> order;
  if (g_idx == nullptr) return order;
  bool identity = true;
  for (int row = 0; row < k; ++row) {
    if (g_idx[row] < 0 || g_idx[row] >= num_groups) {
      return corrupt(name + ".g_idx[" + std::to_string(row) + "] = " + std::to_string(g_idx[row]) + " is outside [0, " +
                     std::to_string(num_groups) + ")");
    }
    identity = identity && g_idx[row] == row / group_size;
  }
  if (identity) return order;
  order.resize(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  for (int i = 0; i < k; ++i) {
    if (g_idx[order[i]] != i / group_size) {
      return unsupported(name + ".g_idx: groups are not all " + std::to_string(group_size) +
                         " rows long, which the W4A16 layout needs");
    }
  }
  return order;
}

}  // namespace

Result<W4A16PackedWeight> w4a16_repack(const int32_t* qweight, const uint16_t* scales, const int32_t* g_idx,
                                       int num_in_features, int num_out_features, int group_size, const char* name) {
  const std::string tensor = name != nullptr ? name : "w4a16";
  const int k = num_in_features;
  const int n = num_out_features;
  if (k <= 0 || k % 64 != 0) {
    return unsupported(tensor + ": in_features " + std::to_string(k) +
                       " must be a positive multiple of 64 for the W4A16 kernel");
  }
  if (n <= 0 || n % 16 != 0) {
    return unsupported(tensor + ": out_features " + std::to_string(n) +
                       " must be a positive multiple of 16 for the W4A16 kernel");
  }
  if (group_size == -1) group_size = k;
  if (group_size != 32 && (group_size <= 0 || (group_size % 64 != 0 && group_size != k))) {
    return unsupported(tensor + ": group_size " + std::to_string(group_size) +
                       " must be -1, 32 or a multiple of 64 for the W4A16 kernel");
  }
  if (qweight == nullptr || scales == nullptr) {
    return invalid_argument(tensor + ": qweight and scales are required");
  }
  const int num_groups = (k + group_size - 1) / group_size;
  CROSSPOINT_ASSIGN_OR_RETURN(std::vector<int32_t> order,
                              row_order_from_g_idx(g_idx, k, group_size, num_groups, tensor));

  // Unpack the nibbles once: q[row][col] with row in packed (permuted) order.
  // Both passes run on the thread pool (a 7B model has ~6.5e9 nibbles to move at load time).
  std::vector<uint8_t> q(static_cast<size_t>(k) * n);
  ThreadPool& pool = global_thread_pool();
  pool.parallel_for(
      static_cast<size_t>(k),
      [&](size_t row_begin, size_t row_end) {
        for (size_t row = row_begin; row < row_end; ++row) {
          const int src = order.empty() ? static_cast<int>(row) : order[row];
          const int32_t* word_row = qweight + static_cast<size_t>(src / 8) * n;
          const int shift = 4 * (src % 8);
          uint8_t* dst = q.data() + row * n;
          for (int col = 0; col < n; ++col) {
            dst[col] = static_cast<uint8_t>((static_cast<uint32_t>(word_row[col]) >> shift) & 0xFu);
          }
        }
      },
      /*min_chunk=*/16);
  auto nib = [&](int row, int col) -> uint32_t { return q[static_cast<size_t>(row) * n + col]; };

  W4A16PackedWeight packed;
  packed.num_in_features = k;
  packed.num_out_features = n;
  packed.group_size = group_size;
  packed.k_perm = std::move(order);
  const int num_n_blocks = n / 16;
  const int num_k_chunks = k / 64;
  packed.weight.resize(static_cast<size_t>(n) * k / 8);
  pool.parallel_for(static_cast<size_t>(num_n_blocks), [&](size_t nb_begin, size_t nb_end) {
    for (size_t nb = nb_begin; nb < nb_end; ++nb) {
      for (int kc = 0; kc < num_k_chunks; ++kc) {
        for (int lane = 0; lane < 32; ++lane) {
          const int c = static_cast<int>(nb) * 16 + lane / 4;
          for (int j = 0; j < 4; ++j) {
            const int k0 = kc * 64 + j * 16 + (lane % 4) * 2;
            const uint32_t word = nib(k0, c) | nib(k0 + 8, c) << 4 | nib(k0, c + 8) << 8 | nib(k0 + 8, c + 8) << 12 |
                                  nib(k0 + 1, c) << 16 | nib(k0 + 9, c) << 20 | nib(k0 + 1, c + 8) << 24 |
                                  nib(k0 + 9, c + 8) << 28;
            packed.weight[((nb * num_k_chunks + kc) * 32 + lane) * 4 + j] = word;
          }
        }
      }
    }
  });
  packed.scales.resize(static_cast<size_t>(num_groups) * num_n_blocks * 8);
  for (int g = 0; g < num_groups; ++g) {
    const uint16_t* s = scales + static_cast<size_t>(g) * n;
    for (int nb = 0; nb < num_n_blocks; ++nb) {
      for (int c = 0; c < 8; ++c) {
        packed.scales[(static_cast<size_t>(g) * num_n_blocks + nb) * 8 + c] =
            static_cast<uint32_t>(s[nb * 16 + c]) | static_cast<uint32_t>(s[nb * 16 + c + 8]) << 16;
      }
    }
  }
  return packed;
}

Result<std::vector<uint32_t>> w4a16_pack_zeros(const uint8_t* zeros, int num_groups, int n, const char* name) {
  const std::string tensor = name != nullptr ? name : "w4a16";
  std::vector<uint32_t> packed;
  if (zeros == nullptr ||
      std::all_of(zeros, zeros + static_cast<size_t>(num_groups) * n, [](uint8_t z) { return z == 8; }))
    return packed;
  if (n <= 0 || n % 16 != 0)
    return unsupported(tensor + ": out_features " + std::to_string(n) + " must be a positive multiple of 16");
  // 1024 + z as fp16 bits: 1024 is 0x6400 and its ulp is 1, so z adds to the mantissa.
  auto half_of = [&](uint8_t z) -> Result<uint32_t> {
    if (z > 16) return corrupt(tensor + ": zero point " + std::to_string(z) + " is outside 0..16");
    return 0x6400u + z;
  };
  const int num_n_blocks = n / 16;
  packed.resize(static_cast<size_t>(num_groups) * num_n_blocks * 8);
  for (int g = 0; g < num_groups; ++g) {
    const uint8_t* z = zeros + static_cast<size_t>(g) * n;
    for (int nb = 0; nb < num_n_blocks; ++nb) {
      for (int c = 0; c < 8; ++c) {
        CROSSPOINT_ASSIGN_OR_RETURN(uint32_t lo, half_of(z[nb * 16 + c]));
        CROSSPOINT_ASSIGN_OR_RETURN(uint32_t hi, half_of(z[nb * 16 + c + 8]));
        packed[(static_cast<size_t>(g) * num_n_blocks + nb) * 8 + c] = lo | hi << 16;
      }
    }
  }
  return packed;
}

}  // namespace crosspoint::cuda
