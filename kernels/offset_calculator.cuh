// PyTorch's IntDivider and OffsetCalculator (aten/src/ATen/cuda/detail/
// IntegerDivider.cuh, OffsetCalculator.cuh): linear index -> byte offsets of
// each operand, for any number of dims, without a hardware divide.
#pragma once

namespace tr {

// Dims an OffsetCalculator holds (PyTorch's MAX_DIMS).
#define TR_MAX_DIMS 25

template <typename Value>
struct DivMod {
  Value div;
  Value mod;
};

// Division by a divisor fixed at launch: n / d == (umulhi(n, m1) + n) >> shift
// for every 32-bit n (Granlund & Montgomery). The host computes m1 and shift.
template <typename Value>
struct IntDivider;

template <>
struct IntDivider<uint32_t> {
  uint32_t divisor;
  uint32_t m1;
  uint32_t shift;

  __device__ __forceinline__ uint32_t div(uint32_t n) const {
    uint32_t t = __umulhi(n, m1);
    return (t + n) >> shift;
  }
  __device__ __forceinline__ DivMod<uint32_t> divmod(uint32_t n) const {
    uint32_t q = div(n);
    return DivMod<uint32_t>{q, n - q * divisor};
  }
};

// The 64-bit variant divides plainly (PyTorch does the same).
template <>
struct IntDivider<uint64_t> {
  uint64_t divisor;

  __device__ __forceinline__ DivMod<uint64_t> divmod(uint64_t n) const {
    return DivMod<uint64_t>{n / divisor, n % divisor};
  }
};

template <int NARGS, typename index_t>
struct OffsetCalculator {
  int32_t dims;
  IntDivider<index_t> sizes_[TR_MAX_DIMS];
  // Byte strides, [dim][operand].
  index_t strides_[TR_MAX_DIMS][NARGS];

  __device__ __forceinline__ Array<index_t, NARGS> get(index_t linear_idx) const {
    Array<index_t, NARGS> offsets = zero_offsets();
#pragma unroll
    for (int dim = 0; dim < TR_MAX_DIMS; ++dim) {
      if (dim == dims) {
        break;
      }
      add_dim(dim, linear_idx, offsets);
    }
    return offsets;
  }

  // get() as a loop over the dims, for lookups inside a thread's load loop:
  // unrolled over TR_MAX_DIMS, ptxas hoists every dim's divisor and stride
  // into uniform registers at the kernel's entry (about 60 constant loads
  // a thread, issued whatever path the thread takes), which on short
  // columns cost a fifth of the thread's instructions.
  __device__ __forceinline__ Array<index_t, NARGS> get_rolled(index_t linear_idx) const {
    Array<index_t, NARGS> offsets = zero_offsets();
#pragma unroll 1
    for (int dim = 0; dim < dims; ++dim) {
      add_dim(dim, linear_idx, offsets);
    }
    return offsets;
  }

 private:
  __device__ __forceinline__ static Array<index_t, NARGS> zero_offsets() {
    Array<index_t, NARGS> offsets;
#pragma unroll
    for (int arg = 0; arg < NARGS; arg++) {
      offsets[arg] = 0;
    }
    return offsets;
  }

  // Peels dim `dim`'s index off `linear_idx` and adds its offsets.
  __device__ __forceinline__ void add_dim(int dim, index_t& linear_idx, Array<index_t, NARGS>& offsets) const {
    DivMod<index_t> divmod = sizes_[dim].divmod(linear_idx);
    linear_idx = divmod.div;
#pragma unroll
    for (int arg = 0; arg < NARGS; arg++) {
      offsets[arg] += divmod.mod * strides_[dim][arg];
    }
  }
};

}  // namespace tr
