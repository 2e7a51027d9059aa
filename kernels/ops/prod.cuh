// prod: multiplication (wrapping for integers; a bool product is a logical
// and once projected).
#pragma once

namespace tr {

template <typename compute_t, typename cast_t>
struct ProdOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit ProdOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(1); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return mul_op(acc, load<cast_t, compute_t>(x));
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return mul_op(a, b); }
};

}  // namespace tr
