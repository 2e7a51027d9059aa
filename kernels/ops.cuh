// The interface every reduction functor implements: PyTorch's `ops_t`
// (aten/src/ATen/native/SharedReduceOps.h). The CPU backend's functors in
// src/cpu/ops.rs carry the same names and the same rules.
//   arg_t                  the accumulator: a value, a (value, index) pair,
//                          Welford state, ... whatever `reduce` returns
//   identity()             the accumulator of zero elements
//   reduce(acc, x, idx)    fold one input element (idx: its index in the
//                          reduced range, or in a piece of it whose stored
//                          indices translate_idx shifts later, for the index
//                          reductions). The kernel folds each accumulator's
//                          elements in index order, so idx is never below an
//                          index acc holds (`combine` meets partials in any
//                          order)
//   combine(a, b)          merge two partial accumulators
//   project<out_t>(acc)    turn the final accumulator into the result
//   warp_shfl_down(acc, d) move an accumulator across lanes
//   translate_idx(acc, b)  shift stored indices of a split iterator
//   noutputs               1, or 2 for the ops that write a second output
//                          (indices, max, mean) from the same accumulator:
//                          they also define second_t<out_t> (its element
//                          type) and project_second<out_t>(acc)
// Each functor is a template over <compute_t, cast_t>: elements are cast to
// cast_t first where that cast changes values (torch's `self.to(dtype)`
// before `sum(dtype=)`), then converted to compute_t, the type the op
// computes in. Without a value-changing cast, cast_t is compute_t.
// The kernel only ever calls these, so a new op is a new functor in
// kernels/ops/, never a change to reduce.cuh. Two traits are optional:
//   ops_t::kAnyOrder        true where the result is the same whatever
//                          order the inputs meet in, to the bit (the index
//                          ops: ties and NaNs go to the lower index, so the
//                          winner is unique). The kernel may then fold a
//                          lane's loads into one set of accumulators
//                          (AnyOrder, below; thread_reduce_impl).
//   ByteSum<ops_t, scalar_t>  true where reducing one-byte inputs is adding
//                          them as integers, exact in any order: the kernel
//                          may then add a load's bytes four an instruction
//                          (add_bytes) and combine that partial sum into the
//                          accumulator, as it combines another lane's. The
//                          host sizes those loads by its own statement of the
//                          rule (Signature::sums_bytes), which every module
//                          passes to ReduceOp, and ReduceOp asserts the two
//                          agree.
#pragma once

namespace tr {

template <typename ops_t, typename scalar_t>
struct ByteSum {
  static constexpr bool value = false;
};

// ops_t::kAnyOrder where the functor declares it, else false.
template <typename T>
struct VoidOf {
  using type = void;
};
template <typename ops_t, typename = void>
struct AnyOrder {
  static constexpr bool value = false;
};
template <typename ops_t>
struct AnyOrder<ops_t, typename VoidOf<decltype(ops_t::kAnyOrder)>::type> {
  static constexpr bool value = ops_t::kAnyOrder;
};

// Per-launch scalars an op may need (mean's factor, var's correction): the
// host's OpParams.
struct OpParams {
  double values[2];
};

// The value of a stored element as the op computes with it, through the
// cast torch applies first.
template <typename cast_t, typename compute_t, typename scalar_t>
__device__ __forceinline__ compute_t load(scalar_t x) {
  return convert<compute_t>(convert<cast_t>(x));
}

// Integer sums and products wrap (two's complement), as the CPU backend's
// wrapping_add/wrapping_mul do; doing them in unsigned keeps that defined
// behaviour in C++.
__device__ __forceinline__ int64_t add_op(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
__device__ __forceinline__ float add_op(float a, float b) { return a + b; }
__device__ __forceinline__ double add_op(double a, double b) { return a + b; }

// A sum's add of one input element: acc + v, v the element of scalar_t
// already converted to compute_t. Where the element is an integer narrower
// than an int64 sum (bool, u8, i32), the add is spelled in 32-bit halves,
// with the low half's carry out found by logic (bit 31 of
// (a & b) | ((a | b) & ~lo)) instead of the hardware's carry flag. A plain
// 64-bit add is two instructions joined by two carry predicates, and in
// short_rows_kernel, whose eight rows' loads already hold the predicate
// registers, ptxas issued the rows' adds between their loads (seen in the
// i64 rows' SASS). With these adds, i32 rows of 2-128 ran 1.06-1.14x
// faster on an H200 (long rows and columns level); i64 rows, two adds a
// load where i32 rows have four, ran 7-16% slower with them, so i64 inputs
// keep the plain add (docs/performance-history.md).
template <typename scalar_t, typename compute_t>
__device__ __forceinline__ compute_t add_input_op(compute_t acc, compute_t v) {
  constexpr bool narrow_integer =
      is_same<scalar_t, Bool>::value || is_same<scalar_t, uint8_t>::value || is_same<scalar_t, int32_t>::value;
  if constexpr (narrow_integer && is_same<compute_t, int64_t>::value) {
    const uint32_t alo = (uint32_t)acc, vlo = (uint32_t)v;
    const uint32_t lo = alo + vlo;
    const uint32_t carry = ((alo & vlo) | ((alo | vlo) & ~lo)) >> 31;
    const uint32_t hi = (uint32_t)((uint64_t)acc >> 32) + (uint32_t)((uint64_t)v >> 32) + carry;
    return (compute_t)(((uint64_t)hi << 32) | lo);
  } else {
    return add_op(acc, v);
  }
}

// `sum` plus bytes [first, end) of a vector of one-byte inputs (all of
// them, or one of packed rows' rows): dp4a with ones on those bytes of each
// word that holds any (add_bytes, below, says why). With constant
// bounds (unrolled callers) the masks fold to constants.
template <typename T, int N>
__device__ __forceinline__ uint32_t add_bytes_in(const aligned_vector<T, N>& v, int first, int end, uint32_t sum) {
  static_assert(sizeof(T) == 1 && N % 4 == 0, "add_bytes_in takes whole words of bytes");
  const uint32_t* words = reinterpret_cast<const uint32_t*>(&v);
#pragma unroll
  for (int k = 0; k < N / 4; k++) {
    uint32_t ones = 0;
#pragma unroll
    for (int b = 0; b < 4; b++) {
      ones |= (first <= 4 * k + b && 4 * k + b < end) ? 1u << (8 * b) : 0u;
    }
    if (ones != 0) {
      asm("dp4a.u32.u32 %0, %1, %2, %3;" : "=r"(sum) : "r"(words[k]), "r"(ones), "r"(sum));
    }
  }
  return sum;
}

// `sum` plus the bytes of a vector of one-byte inputs, four at a time:
// dp4a multiplies a word's four bytes by four ones and adds them to `sum`
// in one instruction, where widening each byte and adding it to a 64-bit
// sum took about six. u8 and bool inputs are unsigned bytes (a bool holds
// 0 or 1, as the host's Tensor guarantees). Callers add at most a few
// thousand bytes into one `sum`, far from wrapping its 32 bits.
template <typename T, int N>
__device__ __forceinline__ uint32_t add_bytes(const aligned_vector<T, N>& v, uint32_t sum) {
  return add_bytes_in(v, 0, N, sum);
}

__device__ __forceinline__ int64_t mul_op(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}
__device__ __forceinline__ float mul_op(float a, float b) { return a * b; }
__device__ __forceinline__ double mul_op(double a, double b) { return a * b; }

// Float math for the ops that need it, one name for both widths.
__device__ __forceinline__ float exp_op(float v) { return expf(v); }
__device__ __forceinline__ double exp_op(double v) { return exp(v); }
__device__ __forceinline__ float log_op(float v) { return logf(v); }
__device__ __forceinline__ double log_op(double v) { return log(v); }
__device__ __forceinline__ float sqrt_op(float v) { return sqrtf(v); }
__device__ __forceinline__ double sqrt_op(double v) { return sqrt(v); }
__device__ __forceinline__ float abs_op(float v) { return fabsf(v); }
__device__ __forceinline__ double abs_op(double v) { return fabs(v); }
__device__ __forceinline__ float pow_op(float v, float p) { return powf(v, p); }
__device__ __forceinline__ double pow_op(double v, double p) { return pow(v, p); }

__device__ __forceinline__ int32_t shfl_down(int32_t v, int offset) { return (int32_t)shfl_down_u32((uint32_t)v, offset); }

__device__ __forceinline__ bool is_nan(float v) { return v != v; }
__device__ __forceinline__ bool is_nan(double v) { return v != v; }
__device__ __forceinline__ bool is_nan(int64_t) { return false; }

// The parts every scalar-accumulator functor shares: shuffles move the
// value, and there are no indices to translate.
// Two values of one type: aminmax's (min, max), logsumexp's (max, sum).
// Its size is the host's Accumulator::Pair.
template <typename T>
struct Pair {
  T first;
  T second;
};

template <typename T>
__device__ __forceinline__ Pair<T> shfl_down(Pair<T> a, int offset) {
  return {shfl_down(a.first, offset), shfl_down(a.second, offset)};
}

template <typename arg_t>
struct ScalarOpsBase {
  static constexpr int noutputs = 1;
  __device__ __forceinline__ arg_t warp_shfl_down(arg_t a, int offset) const { return shfl_down(a, offset); }
  __device__ __forceinline__ arg_t translate_idx(arg_t a, int64_t /*base_idx*/) const { return a; }
  template <typename out_t>
  __device__ __forceinline__ out_t project(arg_t a) const { return convert<out_t>(a); }
};

}  // namespace tr
