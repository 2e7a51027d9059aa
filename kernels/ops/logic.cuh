// any and all: a bool accumulator; an element is true when it is not zero
// (NaN included), tested in the input's own compute type so that 0.5 is true.
#pragma once

namespace tr {

template <typename compute_t, typename cast_t>
struct AnyOps : ScalarOpsBase<bool> {
  using arg_t = bool;
  __device__ __forceinline__ explicit AnyOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return false; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return acc || load<cast_t, compute_t>(x) != compute_t(0);
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return a || b; }
};

template <typename compute_t, typename cast_t>
struct AllOps : ScalarOpsBase<bool> {
  using arg_t = bool;
  __device__ __forceinline__ explicit AllOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return true; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return acc && load<cast_t, compute_t>(x) != compute_t(0);
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return a && b; }
};

}  // namespace tr
