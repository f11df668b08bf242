// Internal to w4a16_gemm_wgmma.cu: the Hopper (sm_90a) warpgroup MMA and the pieces around it,
// written from the PTX ISA ("Asynchronous Warpgroup Level Matrix Multiply-Accumulate"). Only
// meaningful in device code compiled for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); the callers guard
// their kernel bodies. Not a public API.
//
// wgmma.mma_async.m64nNk16.f32.f16.f16 with A from registers and B from shared memory:
//   D [64 x N] f32 += A [64 x 16] f16 (registers) * B [16 x N] f16 (shared memory, descriptor)
// A fragment: warp w of the warpgroup holds rows 16w .. 16w+15 exactly as the mma.m16n8k16 A
//   fragment: with g = lane / 4 and t = lane % 4,
//     a[0] = (row g,   k 2t, 2t+1)   a[1] = (row g+8, k 2t, 2t+1)
//     a[2] = (row g,   k 2t+8, +9)   a[3] = (row g+8, k 2t+8, +9)   (lower k in the low half)
// D fragment: d[4i + r] for n8 tile i = 0 .. N/8-1 of warp w:
//     r = 0, 1: row 16w + g,     column 8i + 2t + r
//     r = 2, 3: row 16w + g + 8, column 8i + 2t + r - 2
// B: "column-major" K x N, i.e. each of the N columns has its K values contiguous (K-major),
//   which is a row-major [N][K] tile; imm-trans-b = 0.
#pragma once

#include <cstdint>

namespace crosspoint::cuda::wgmma_internal {

// wgmma.fence: orders this thread's earlier register writes (A fragments, accumulators) before
// the wgmma.mma_async instructions that follow.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the group of wgmma.mma_async issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most kPending committed wgmma groups of this warpgroup are still in flight;
// only then may their A registers and accumulators be touched, or their shared memory reused.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Pins a register in program order relative to the asm volatile statements around it, so the
// compiler moves no access to it across a wgmma fence or wait (it sees a read and a write).
__device__ __forceinline__ void pin_register(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void pin_register(uint32_t& r) { asm volatile("" : "+r"(r)::"memory"); }
// A real use of four registers that the assembler cannot drop: a shared-memory store that runs
// only when `never` is nonzero (callers pass a value that is always 0 but unknown at compile
// time). Keeps the registers of an in-flight wgmma's A operand from being reused before the
// point of this call: ptxas does not treat them as live until the wgmma completes, and
// register-only pins (pin_register) do not reach it.
__device__ __forceinline__ void keep_registers_until_here(const uint32_t (&r)[4], uint32_t never, uint32_t smem_addr) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n@p st.shared.v4.b32 [%5], {%0, %1, %2, %3};\n}\n" ::"r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3]), "r"(never), "r"(smem_addr)
               : "memory");
}

// Makes this thread's generic-proxy writes to shared memory (cp.async included) visible to
// the async proxy, through which wgmma reads its shared-memory operand.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// 16-byte global -> shared copy, zero-filled instead when !valid (src is not read then).
__device__ __forceinline__ void cp_async_16_or_zero(void* smem_dst, const void* global_src, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(global_src), "r"(valid ? 16 : 0));
}

// Shared-memory matrix descriptor of a K-major operand tile stored with the 128-byte swizzle:
// rows of 64 fp16 (128 bytes), row r's 16-byte chunk c at byte r * 128 + ((c ^ (r % 8)) * 16),
// the tile 1024-byte aligned (the swizzle XORs address bits 4-6 with bits 7-9). Fields (PTX ISA,
// "Matrix Descriptor Format"), addresses and offsets in 16-byte units:
//   bits  0-13  start address
//   bits 16-29  leading-dimension byte offset: unused for swizzled K-major layouts (set to 1)
//   bits 32-45  stride-dimension byte offset: from one group of 8 rows to the next, 1024 B
//   bits 49-51  base offset: 0 (tile 1024-byte aligned)
//   bits 62-63  swizzle mode: 1 = 128-byte swizzle
// The k16 step s of a 64-wide tile starts 32 * s bytes further (+2 in the start field): the
// hardware applies the swizzle to the full address, so the step's chunks are found as stored.
__device__ __forceinline__ uint64_t sw128_kmajor_desc(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(1) << 16) |
         (static_cast<uint64_t>(1024 >> 4) << 32) | (static_cast<uint64_t>(1) << 62);
}

// d += A * B for one k16 step; N = kTokens columns, kTokens / 2 accumulators per thread.
// scale-d is the predicate p = true (accumulate); imm-scale-a/b 1 (no negation); imm-trans-b 0.
template <int kTokens>
__device__ __forceinline__ void wgmma_m64k16_rs(float (&d)[kTokens / 2], const uint32_t (&a)[4], uint64_t b_desc);

#define CP_WGMMA_D8(i)                                                                                        \
  "+f"(d[(i) + 0]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3]), "+f"(d[(i) + 4]), "+f"(d[(i) + 5]), \
      "+f"(d[(i) + 6]), "+f"(d[(i) + 7])

template <>
__device__ __forceinline__ void wgmma_m64k16_rs<16>(float (&d)[8], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
      : CP_WGMMA_D8(0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_rs<32>(float (&d)[16], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
      : CP_WGMMA_D8(0), CP_WGMMA_D8(8)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_rs<64>(float (&d)[32], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
      : CP_WGMMA_D8(0), CP_WGMMA_D8(8), CP_WGMMA_D8(16), CP_WGMMA_D8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_rs<128>(float (&d)[64], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
      : CP_WGMMA_D8(0), CP_WGMMA_D8(8), CP_WGMMA_D8(16), CP_WGMMA_D8(24), CP_WGMMA_D8(32), CP_WGMMA_D8(40),
        CP_WGMMA_D8(48), CP_WGMMA_D8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

template <>
__device__ __forceinline__ void wgmma_m64k16_rs<256>(float (&d)[128], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "{%128, %129, %130, %131}, %132, p, 1, 1, 0;\n}\n"
      : CP_WGMMA_D8(0), CP_WGMMA_D8(8), CP_WGMMA_D8(16), CP_WGMMA_D8(24), CP_WGMMA_D8(32), CP_WGMMA_D8(40),
        CP_WGMMA_D8(48), CP_WGMMA_D8(56), CP_WGMMA_D8(64), CP_WGMMA_D8(72), CP_WGMMA_D8(80), CP_WGMMA_D8(88),
        CP_WGMMA_D8(96), CP_WGMMA_D8(104), CP_WGMMA_D8(112), CP_WGMMA_D8(120)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}
#undef CP_WGMMA_D8

}  // namespace crosspoint::cuda::wgmma_internal
