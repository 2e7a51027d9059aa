// amax and amin: NaN propagates (a NaN on either side wins), as PyTorch's
// MaxNanFunctor / MinNanFunctor.
#pragma once

namespace tr {

template <typename compute_t, typename cast_t>
struct MaxOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit MaxOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return Limits<compute_t>::lowest(); }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return (is_nan(a) || a > b) ? a : b; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return combine(acc, load<cast_t, compute_t>(x));
  }
};

template <typename compute_t, typename cast_t>
struct MinOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit MinOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return Limits<compute_t>::highest(); }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return (is_nan(a) || a < b) ? a : b; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return combine(acc, load<cast_t, compute_t>(x));
  }
};

}  // namespace tr
