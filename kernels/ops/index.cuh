// max(dim)/min(dim) (value and index), argmax/argmin (the index) and
// aminmax (min and max): PyTorch's MinMaxReductionOps, ArgMaxOps, ArgMinOps
// and MinMaxOps. NaN counts as the largest value for max and as the
// smallest for min (it wins either way); among equal values and among NaNs
// the lower index wins, so the result does not depend on how partials meet.
#pragma once

namespace tr {

// A value and its index in the reduced range: the host's
// Accumulator::ValueIndex, 16 bytes for every compute type.
template <typename T>
struct ValueIndex {
  T value;
  int64_t index;
};
static_assert(sizeof(ValueIndex<float>) == 16, "ValueIndex<float> differs from Accumulator::ValueIndex");
static_assert(sizeof(ValueIndex<double>) == 16, "ValueIndex<double> differs from Accumulator::ValueIndex");
static_assert(sizeof(ValueIndex<int64_t>) == 16, "ValueIndex<int64_t> differs from Accumulator::ValueIndex");

// PyTorch's GreaterOrNan / LessOrNan: whether (a, ia) beats (b, ib).
template <bool is_max, typename T>
__device__ __forceinline__ bool beats(T a, T b, int64_t ia, int64_t ib) {
  if (is_nan(a)) {
    return !is_nan(b) || ia < ib;
  }
  if (a == b) {
    return ia < ib;
  }
  return is_max ? a > b : a < b;
}

template <typename compute_t, typename cast_t, bool is_max>
struct IndexOpsBase {
  using arg_t = ValueIndex<compute_t>;
  static constexpr int noutputs = 1;
  // (value, index) pairs are totally ordered by beats: one pair wins
  // however the partials meet.
  static constexpr bool kAnyOrder = true;
  // Index 0 can only win a tie with the identity's value, which means every
  // element is that value and 0 is the answer.
  __device__ __forceinline__ static arg_t identity() {
    return {is_max ? Limits<compute_t>::lowest() : Limits<compute_t>::highest(), 0};
  }
  __device__ __forceinline__ static arg_t pick(arg_t a, arg_t b) {
    return beats<is_max>(a.value, b.value, a.index, b.index) ? a : b;
  }
  // `pick` with the index comparisons known: the kernel folds an
  // accumulator's elements in index order (kernels/ops.cuh), so acc's index
  // is below idx (or both are 0, acc still the identity) and acc wins every
  // tie. A fold through beats, its comparisons and its branch, was most of
  // the 22 instructions an element of a 16-bit row took, in kernels that
  // issued an instruction in two of every three cycles: bound by issue,
  // not by memory (docs/PERFORMANCE.md has the profile).
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t idx) const {
    const compute_t v = load<cast_t, compute_t>(x);
    const bool keep = is_nan(acc.value) || (is_max ? acc.value >= v : acc.value <= v);
    return keep ? acc : arg_t{v, idx};
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const { return pick(a, b); }
  __device__ __forceinline__ arg_t warp_shfl_down(arg_t a, int offset) const {
    return {shfl_down(a.value, offset), shfl_down(a.index, offset)};
  }
  // A later piece of a split reduced dim counts from its own start.
  __device__ __forceinline__ arg_t translate_idx(arg_t a, int64_t base_idx) const {
    return {a.value, a.index + base_idx};
  }
};

// argmax / argmin: the index only (an int64 output).
template <typename compute_t, typename cast_t, bool is_max>
struct ArgOps : IndexOpsBase<compute_t, cast_t, is_max> {
  using arg_t = ValueIndex<compute_t>;
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    return convert<out_t>(a.index);
  }
};

// max(dim) / min(dim): the value, and the index as the second output.
template <typename compute_t, typename cast_t, bool is_max>
struct ValueAndIndexOps : IndexOpsBase<compute_t, cast_t, is_max> {
  using arg_t = ValueIndex<compute_t>;
  static constexpr int noutputs = 2;
  template <typename out_t>
  using second_t = int64_t;
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    return convert<out_t>(a.value);
  }
  template <typename out_t>
  __device__ __forceinline__ int64_t project_second(arg_t a) const {
    return a.index;
  }
};

template <typename compute_t, typename cast_t>
struct ArgMaxOps : ArgOps<compute_t, cast_t, true> {
  __device__ __forceinline__ explicit ArgMaxOps(const OpParams&) {}
};
template <typename compute_t, typename cast_t>
struct ArgMinOps : ArgOps<compute_t, cast_t, false> {
  __device__ __forceinline__ explicit ArgMinOps(const OpParams&) {}
};
template <typename compute_t, typename cast_t>
struct MaxDimOps : ValueAndIndexOps<compute_t, cast_t, true> {
  __device__ __forceinline__ explicit MaxDimOps(const OpParams&) {}
};
template <typename compute_t, typename cast_t>
struct MinDimOps : ValueAndIndexOps<compute_t, cast_t, false> {
  __device__ __forceinline__ explicit MinDimOps(const OpParams&) {}
};

// aminmax: (min, max) with NaN propagating to both; the max is the second
// output.
template <typename compute_t, typename cast_t>
struct MinMaxOps {
  using arg_t = Pair<compute_t>;
  static constexpr int noutputs = 2;
  template <typename out_t>
  using second_t = out_t;
  __device__ __forceinline__ explicit MinMaxOps(const OpParams&) {}
  __device__ __forceinline__ static arg_t identity() {
    return {Limits<compute_t>::highest(), Limits<compute_t>::lowest()};
  }
  __device__ __forceinline__ arg_t combine(arg_t a, arg_t b) const {
    return {(is_nan(a.first) || a.first < b.first) ? a.first : b.first,
            (is_nan(a.second) || a.second > b.second) ? a.second : b.second};
  }
  template <typename scalar_t>
  __device__ __forceinline__ arg_t reduce(arg_t acc, scalar_t x, int64_t /*idx*/) const {
    compute_t v = load<cast_t, compute_t>(x);
    return combine(acc, arg_t{v, v});
  }
  __device__ __forceinline__ arg_t warp_shfl_down(arg_t a, int offset) const { return shfl_down(a, offset); }
  __device__ __forceinline__ arg_t translate_idx(arg_t a, int64_t /*base_idx*/) const { return a; }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const {
    return convert<out_t>(a.first);
  }
  template <typename out_t>
  __device__ __forceinline__ out_t project_second(arg_t a) const {
    return convert<out_t>(a.second);
  }
};

}  // namespace tr
