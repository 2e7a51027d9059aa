// logsumexp in one pass: an online (m, s) with sum(exp(x)) = exp(m) * s and
// m the largest element so far. A larger element rescales s; partials meet
// by rescaling the side with the smaller m. Equal maxima add their sums
// directly, so two infinities of one sign never meet in m - m (NaN): a
// slice of -inf gives -inf + log(n) = -inf, any +inf gives +inf. A NaN
// element never becomes m; it turns s into NaN, and so the result.
#pragma once

namespace tr {

template <typename compute_t, typename cast_t>
struct LogSumExpOps {
  using arg_t = Pair<compute_t>;  // (m, s)
  static constexpr int noutputs = 1;
  __device__ __forceinline__ explicit LogSumExpOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() { return {Limits<compute_t>::lowest(), compute_t(0)}; }
  // Branch-free, with one exp per element: exp(-|v - m|) is exp(m - v) when
  // v is the new maximum and exp(v - m) otherwise (IEEE negation is exact, so
  // both are bitwise the branchy forms). Per-element branches around expf
  // kept the compiler from overlapping one element's exp with the next
  // element's load, and diverged while m was still moving.
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    compute_t v = load<cast_t, compute_t>(x);
    compute_t e = v == acc.first ? compute_t(1) : exp_op(-abs_op(v - acc.first));
    compute_t up_sum = acc.second * e + compute_t(1);
    compute_t same_sum = acc.second + e;
    bool up = v > acc.first;
    return {up ? v : acc.first, up ? up_sum : same_sum};
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const {
    if (a.first == b.first) {
      return {a.first, a.second + b.second};
    }
    if (a.first > b.first) {
      return {a.first, a.second + b.second * exp_op(b.first - a.first)};
    }
    return {b.first, b.second + a.second * exp_op(a.first - b.first)};
  }
  __device__ __forceinline__ arg_t warp_shfl_down(arg_t a, int offset) const { return shfl_down(a, offset); }
  __device__ __forceinline__ arg_t translate_idx(arg_t a, int64_t /*base_idx*/) const { return a; }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    return convert<out_t>(a.first + log_op(a.second));
  }
};

}  // namespace tr
