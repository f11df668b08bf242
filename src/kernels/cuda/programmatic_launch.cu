// The on/off switch of programmatic_launch.cuh.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/programmatic_launch.cuh"

namespace crosspoint::cuda {
namespace {

// -1 = not decided yet, 0 = off, 1 = on.
std::atomic<int> g_enabled{-1};

int decide() {
  const char* env = std::getenv("CROSSPOINT_PDL");
  if (env != nullptr && std::strcmp(env, "0") == 0) return 0;
  int device = 0, major = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
    cudaGetLastError();  // no device: launches fail on their own; do not leave this error behind
    return 0;
  }
  return major >= 9 ? 1 : 0;
}

}  // namespace

bool programmatic_launch_enabled() {
  int state = g_enabled.load(std::memory_order_relaxed);
  if (state < 0) {
    state = decide();
    g_enabled.store(state, std::memory_order_relaxed);
  }
  return state == 1;
}

void set_programmatic_launch_enabled(bool enabled) { g_enabled.store(enabled ? 1 : 0, std::memory_order_relaxed); }

}  // namespace crosspoint::cuda
