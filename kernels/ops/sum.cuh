// sum, nansum and mean: addition, with NaN skipped for nansum and a final
// scale for mean.
#pragma once

namespace tr {

template <typename compute_t, typename cast_t>
struct SumOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit SumOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return add_input_op<scalar_t>(acc, load<cast_t, compute_t>(x));
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return add_op(a, b); }
};

// An int64 sum of u8 or bool inputs, with no cast between, adds integers
// (wrapping, so associative): a load's bytes may be added first.
template <typename scalar_t>
struct ByteSum<SumOps<int64_t, int64_t>, scalar_t> {
  static constexpr bool value = is_same<scalar_t, uint8_t>::value || is_same<scalar_t, Bool>::value;
};

template <typename compute_t, typename cast_t>
struct NanSumOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  __device__ __forceinline__ explicit NanSumOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    compute_t v = load<cast_t, compute_t>(x);
    return is_nan(v) ? acc : add_input_op<scalar_t>(acc, v);
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return add_op(a, b); }
};

// PyTorch's MeanOps: a sum, times factor = outputs / inputs (computed by the
// host in compute_t's precision, as PyTorch's factor_t) at the end.
template <typename compute_t, typename cast_t>
struct MeanOps : ScalarOpsBase<compute_t> {
  using arg_t = compute_t;
  compute_t factor;
  __device__ __forceinline__ explicit MeanOps(const OpParams& p) : factor((compute_t)p.values[0]) {}
  __device__ __forceinline__ static arg_t identity() { return arg_t(0); }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    return add_input_op<scalar_t>(acc, load<cast_t, compute_t>(x));
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return add_op(a, b); }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const { return convert<out_t>(a * factor); }
};

}  // namespace tr
