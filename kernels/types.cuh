// Element types and conversions for the reduce kernel.
//
// NVRTC ships no standard or CUDA toolkit headers (no <cstdint>, no
// cuda_fp16.h), so the fixed-width types and the f16/bf16 conversions are
// written here: f16 through the PTX `cvt` instructions (exact IEEE
// round-to-nearest-even, the same as the `half` crate on the host), bf16
// through bit operations (the PTX bf16 `cvt` needs sm_80, these need nothing).
#pragma once

namespace tr {

// Inside the namespace so they never clash with a host toolchain's own
// <stdint.h> (nvcc includes it; NVRTC has none).
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;

// Storage-only wrappers: the kernel never does arithmetic in these types,
// it widens them to the accumulator first (as PyTorch's acc_type does).
struct Half { uint16_t x; };
struct BFloat16 { uint16_t x; };
// torch.bool: one byte holding 0 or 1.
struct Bool { uint8_t x; };

__device__ __forceinline__ float half_to_float(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

__device__ __forceinline__ uint16_t float_to_half(float f) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

__device__ __forceinline__ float bfloat16_to_float(uint16_t b) {
  return __uint_as_float(((uint32_t)b) << 16);
}

// Round to nearest, ties to even, as PyTorch's c10::BFloat16(float) does:
// one conversion instruction from sm_80 (what PyTorch's CUDA build uses
// there; a NaN becomes the canonical quiet NaN), bit arithmetic before it.
// The bit arithmetic is about 7 instructions a result, which showed where
// results are many: on an H200, bf16 columns of 2 ([2, 67108864] over dim
// 0, a lane storing 8 results) took 148 us with it and 133 us with the
// instruction, as long as f16's (135 us).
__device__ __forceinline__ uint16_t float_to_bfloat16(float f) {
#if __CUDA_ARCH__ >= 800
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
#else
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: keep sign and payload, force it quiet (what `half::bf16` does).
    return (uint16_t)((u >> 16) | 0x40u);
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
#endif
}

// widen(): the value of a stored element in a type C++ can compute with.
__device__ __forceinline__ float widen(Half v) { return half_to_float(v.x); }
__device__ __forceinline__ float widen(BFloat16 v) { return bfloat16_to_float(v.x); }
__device__ __forceinline__ int32_t widen(Bool v) { return v.x != 0; }
template <typename T>
__device__ __forceinline__ T widen(T v) { return v; }

// Narrow<To>::from(v): C++ cast semantics into a storage type. Float to
// integer conversions compile to `cvt.rzi`, which saturates and maps NaN to
// 0, as Rust's `as` does on the CPU backend.
template <typename To>
struct Narrow {
  template <typename From>
  __device__ __forceinline__ static To from(From v) { return static_cast<To>(v); }
};
template <>
struct Narrow<Half> {
  template <typename From>
  __device__ __forceinline__ static Half from(From v) { return Half{float_to_half(static_cast<float>(v))}; }
};
template <>
struct Narrow<BFloat16> {
  template <typename From>
  __device__ __forceinline__ static BFloat16 from(From v) { return BFloat16{float_to_bfloat16(static_cast<float>(v))}; }
};
template <>
struct Narrow<Bool> {
  template <typename From>
  __device__ __forceinline__ static Bool from(From v) { return Bool{(uint8_t)(v != From(0))}; }
};

// convert<To>(v): torch's static_cast between any two of the eight dtypes.
template <typename To, typename From>
__device__ __forceinline__ To convert(From v) {
  return Narrow<To>::from(widen(v));
}

// PyTorch's memory::aligned_vector: N elements loaded as one access.
template <typename T, int N>
struct alignas(sizeof(T) * N) aligned_vector {
  T val[N];
};

// PyTorch's at::detail::Array: a register array that can be returned by value.
template <typename T, int N>
struct Array {
  T data[N];
  __device__ __forceinline__ T& operator[](int i) { return data[i]; }
  __device__ __forceinline__ const T& operator[](int i) const { return data[i]; }
};

// Warp shuffles through the 32-bit intrinsic, so every accumulator type
// (including 64-bit ones) goes through one code path. Callers are
// block-uniform, so the lanes that exist are exactly the participants: a
// block smaller than a warp (a tiny reduction) names only its own lanes.
__device__ __forceinline__ uint32_t block_lanes_mask() {
  const uint32_t n = blockDim.x * blockDim.y * blockDim.z;
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}
__device__ __forceinline__ uint32_t shfl_down_u32(uint32_t v, int offset) {
  return __shfl_down_sync(block_lanes_mask(), v, offset);
}
__device__ __forceinline__ float shfl_down(float v, int offset) {
  return __uint_as_float(shfl_down_u32(__float_as_uint(v), offset));
}
__device__ __forceinline__ int64_t shfl_down(int64_t v, int offset) {
  uint64_t u = (uint64_t)v;
  uint32_t lo = shfl_down_u32((uint32_t)u, offset);
  uint32_t hi = shfl_down_u32((uint32_t)(u >> 32), offset);
  return (int64_t)(((uint64_t)hi << 32) | lo);
}
__device__ __forceinline__ double shfl_down(double v, int offset) {
  return __longlong_as_double(shfl_down(__double_as_longlong(v), offset));
}
__device__ __forceinline__ bool shfl_down(bool v, int offset) { return shfl_down_u32(v ? 1u : 0u, offset) != 0; }

// Any accumulator from lane `src_lane` of the warp, moved as its 32-bit
// words: unlike the functors' warp_shfl_down, which move each field, this
// needs nothing of the type but its bytes, so every functor's arg_t has it
// as it is. (A source past the warp wraps around it, as __shfl_sync does.)
template <typename T>
__device__ __forceinline__ T shfl_bits(T v, uint32_t src_lane) {
  constexpr int kWords = (int)((sizeof(T) + 3) / 4);
  uint32_t words[kWords] = {};
  memcpy(words, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < kWords; i++) {
    words[i] = __shfl_sync(block_lanes_mask(), words[i], (int)src_lane);
  }
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// The bounds of the compute types, the identities of max and min: infinities
// for floats (so NaN and every finite value beat them), the extreme values
// for integers.
template <typename T>
struct Limits;
template <>
struct Limits<float> {
  __device__ __forceinline__ static float lowest() { return -__int_as_float(0x7f800000); }
  __device__ __forceinline__ static float highest() { return __int_as_float(0x7f800000); }
};
template <>
struct Limits<double> {
  __device__ __forceinline__ static double lowest() { return -__longlong_as_double(0x7ff0000000000000ll); }
  __device__ __forceinline__ static double highest() { return __longlong_as_double(0x7ff0000000000000ll); }
};
template <>
struct Limits<int64_t> {
  __device__ __forceinline__ static int64_t lowest() { return (int64_t)0x8000000000000000ull; }
  __device__ __forceinline__ static int64_t highest() { return (int64_t)0x7fffffffffffffffull; }
};

// std::is_same, which NVRTC has no header for.
template <typename A, typename B>
struct is_same {
  static constexpr bool value = false;
};
template <typename A>
struct is_same<A, A> {
  static constexpr bool value = true;
};

}  // namespace tr
