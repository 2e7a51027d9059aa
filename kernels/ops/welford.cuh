// var, std, var_mean and std_mean: PyTorch's WelfordOps. Each thread folds
// elements with Welford's update (an exact i32 count), partials meet with
// Chan's combine; project gives var = m2 / max(nf - correction, 0) (or its
// square root) and, as the second output, the mean.
#pragma once

namespace tr {

// The host's Accumulator::Welford: four slots of the float's size.
template <typename T>
struct WelfordData {
  T mean;
  T m2;
  int32_t n;
  T nf;
};
static_assert(sizeof(WelfordData<float>) == 16, "WelfordData<float> differs from Accumulator::Welford");
static_assert(sizeof(WelfordData<double>) == 32, "WelfordData<double> differs from Accumulator::Welford");

// a / b with b a count (1 <= b <= 2^31): IEEE division, as `/`.
template <typename T>
__device__ __forceinline__ T divide_by_count(T a, T b) {
  return a / b;
}

// For float, CUDA's fast path alone, with b's reciprocal shared. CUDA's
// `/` is b's reciprocal (MUFU.RCP refined by two FMAs), three FMAs for the
// quotient and a range check (FCHK) that branches to a slow path. The
// kernel folds a column lane's outputs with one count, but the branch
// around each division kept ptxas from sharing the reciprocal: each
// element of var took a MUFU, five FMAs, the check and a branch. Here the
// reciprocal depends on b alone, so a lane's outputs share it, and nothing
// branches. The quotient has the bits of `/` wherever it is a normal float:
// b >= 1 keeps a * r from overflowing and the remainder is exact, so the
// slow path could only differ in the last place of a subnormal quotient,
// and in the sign of a zero one, which the mean it is added to drops (the
// mean starts at +0, and a sum is -0 only where both terms are). An
// infinite numerator, whose remainder is NaN, keeps a * r.
template <>
__device__ __forceinline__ float divide_by_count<float>(float a, float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  r = __fmaf_rn(r, __fmaf_rn(-b, r, 1.0f), r);
  const float q = __fmaf_rn(a, r, 0.0f);
  const float refined = __fmaf_rn(r, __fmaf_rn(-b, q, a), q);
  return fabsf(q) == Limits<float>::highest() ? q : refined;
}

template <typename compute_t, typename cast_t>
struct WelfordOps {
  using arg_t = WelfordData<compute_t>;
  static constexpr int noutputs = 2;
  template <typename out_t>
  using second_t = out_t;
  compute_t correction;
  bool take_sqrt;
  __device__ __forceinline__ explicit WelfordOps(const OpParams& p)
      : correction((compute_t)p.values[0]), take_sqrt(p.values[1] != 0.0) {}
  __device__ __forceinline__ static arg_t identity() { return {compute_t(0), compute_t(0), 0, compute_t(0)}; }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    compute_t v = load<cast_t, compute_t>(x);
    int32_t n = (int32_t)((uint32_t)acc.n + 1u);
    compute_t nf = (compute_t)n;
    compute_t delta = v - acc.mean;
    compute_t mean = acc.mean + divide_by_count(delta, nf);
    return {mean, acc.m2 + delta * (v - mean), n, nf};
  }
  // After a combine n no longer counts exactly (it could overflow): it is
  // -1 and only nf is read, as in PyTorch.
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const {
    if (a.nf == compute_t(0)) {
      return b;
    }
    if (b.nf == compute_t(0)) {
      return a;
    }
    compute_t delta = b.mean - a.mean;
    compute_t nf = a.nf + b.nf;
    compute_t nb_over_n = b.nf / nf;
    return {a.mean + delta * nb_over_n, a.m2 + b.m2 + delta * delta * a.nf * nb_over_n, -1, nf};
  }
  __device__ __forceinline__ arg_t warp_shfl_down(arg_t a, int offset) const {
    return {shfl_down(a.mean, offset), shfl_down(a.m2, offset), shfl_down(a.n, offset), shfl_down(a.nf, offset)};
  }
  __device__ __forceinline__ arg_t translate_idx(arg_t a, int64_t /*base_idx*/) const { return a; }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    compute_t divisor = a.nf > correction ? a.nf - correction : compute_t(0);
    compute_t var = a.m2 / divisor;
    return convert<out_t>(take_sqrt ? sqrt_op(var) : var);
  }
  template <typename out_t>
  __device__ __forceinline__ out_t project_second(arg_t a) const {
    return convert<out_t>(a.mean);
  }
};

}  // namespace tr
