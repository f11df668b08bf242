// Random device data for benchmarks (hash-based, never zeros): speed does not depend on the
// values, but zeros can run faster than real data, so every buffer is filled.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace crosspoint::bench {

void fill_f16(uint16_t* p, size_t count, float lo, float hi, uint32_t seed, cudaStream_t stream);
void fill_f32(float* p, size_t count, float lo, float hi, uint32_t seed, cudaStream_t stream);
void fill_e4m3(uint8_t* p, size_t count, uint32_t seed, cudaStream_t stream);  // finite codes
void fill_u32(uint32_t* p, size_t count, uint32_t seed, cudaStream_t stream);  // any bits (int4 nibbles)

}  // namespace crosspoint::bench
