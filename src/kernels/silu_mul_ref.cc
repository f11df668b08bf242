#include <cmath>

#include "kernels/silu_mul.h"

namespace crosspoint {

Status silu_mul_ref(const SiluMulArgs& a) {
  if (a.count > 0 && (!a.gate || !a.up || !a.out)) return invalid_argument("silu_mul: null pointer");
  for (int64_t i = 0; i < a.count; ++i) {
    const double g = a.gate[i];
    a.out[i] = static_cast<float>(g / (1.0 + std::exp(-g)) * a.up[i]);
  }
  return Status::ok();
}

}  // namespace crosspoint
