// Reduction ops as small functors, PyTorch's `ops_t` interface
// (aten/src/ATen/native/SharedReduceOps.h):
//   reduce(acc, x, idx)    fold one input element (idx: its index in the
//                          reduced range, which argmax/argmin need)
//   combine(a, b)          merge two partial accumulators
//   project<out_t>(acc)    turn the final accumulator into the output
//   warp_shfl_down(acc, d) move an accumulator across lanes
//   translate_idx(acc, b)  shift stored indices of a split iterator
//   identity()             the accumulator of zero elements
// The kernel only ever calls these, so mean/prod/min/max/argmax/var plug in
// as new functors (with their state in OpParams) without touching reduce.cuh.
#pragma once

namespace tr {

// Per-launch scalars an op may need (mean's factor, var's correction).
struct OpParams {
  double values[2];
};

// Integer sums wrap (two's complement), as the CPU backend's wrapping_add
// does; doing the add in unsigned keeps that defined behaviour in C++.
__device__ __forceinline__ int64_t add_op(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
__device__ __forceinline__ float add_op(float a, float b) { return a + b; }
__device__ __forceinline__ double add_op(double a, double b) { return a + b; }

template <typename acc_t>
struct SumOps {
  using arg_t = acc_t;

  __device__ __forceinline__ explicit SumOps(const OpParams&) {}

  __device__ __forceinline__ static acc_t identity() { return acc_t(0); }

  template <typename scalar_t>
  __device__ __forceinline__ acc_t reduce(acc_t acc, scalar_t x, int64_t /*idx*/) const {
    // The input is cast to the accumulator type first (torch.sum(dtype=)).
    return add_op(acc, convert<acc_t>(x));
  }

  __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const { return add_op(a, b); }

  template <typename out_t>
  __device__ __forceinline__ out_t project(acc_t a) const { return convert<out_t>(a); }

  __device__ __forceinline__ acc_t warp_shfl_down(acc_t a, int offset) const { return shfl_down(a, offset); }

  __device__ __forceinline__ acc_t translate_idx(acc_t a, int64_t /*base_idx*/) const { return a; }
};

}  // namespace tr
