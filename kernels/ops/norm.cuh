// torch.linalg.vector_norm: one functor per kind of order, as PyTorch's
// NormZeroOps, NormOneOps, NormTwoOps, AbsMaxOps, AbsMinOps and NormOps.
// Floating compute types only.
#pragma once

namespace tr {

// p = 0: the number of non-zero elements (NaN counts).
template <typename compute_t, typename cast_t>
struct NormZeroOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit NormZeroOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return acc + (load<cast_t, compute_t>(x) == compute_t(0) ? compute_t(0) : compute_t(1));
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return a + b; }
};

// p = 1: the sum of |x|.
template <typename compute_t, typename cast_t>
struct NormOneOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit NormOneOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return acc + abs_op(load<cast_t, compute_t>(x));
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return a + b; }
};

// p = 2: the square root of the sum of squares.
template <typename compute_t, typename cast_t>
struct NormTwoOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit NormTwoOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    compute_t v = load<cast_t, compute_t>(x);
    return acc + v * v;
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return a + b; }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    return convert<out_t>(sqrt_op(a));
  }
};

// Any other p: (sum of |x|^p)^(1/p), p passed at launch.
template <typename compute_t, typename cast_t>
struct NormOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  compute_t p;
  __device__ __forceinline__ explicit NormOps(const OpParams& params) : p((compute_t)params.values[0]) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return acc + pow_op(abs_op(load<cast_t, compute_t>(x)), p);
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return a + b; }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    return convert<out_t>(pow_op(a, compute_t(1) / p));
  }
};

// p = +inf: max |x|, identity 0; NaN wins.
template <typename compute_t, typename cast_t>
struct AbsMaxOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit AbsMaxOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return (is_nan(a) || a > b) ? a : b; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return combine(acc, abs_op(load<cast_t, compute_t>(x)));
  }
};

// p = -inf: min |x|, identity +inf; NaN wins.
template <typename compute_t, typename cast_t>
struct AbsMinOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit AbsMinOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return Limits<compute_t>::highest(); }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return (is_nan(a) || a < b) ? a : b; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return combine(acc, abs_op(load<cast_t, compute_t>(x)));
  }
};

}  // namespace tr
