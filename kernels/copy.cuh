// Strided-to-contiguous copy: dst[i] = src[offset of logical element i], the
// device side of Tensor::contiguous() for CUDA tensors. Self-contained (NVRTC
// compiles it alone, without the reduce kernel's headers).
//
// Elements are copied as unsigned integers of their size, so one
// instantiation per element size serves every dtype.

namespace tr_copy {

// Dims a copy handles after the host has coalesced them.
#define TR_COPY_MAX_DIMS 25

struct CopyParams {
  // Byte address of logical element [0, 0, ...] and of the output.
  unsigned long long src;
  unsigned long long dst;
  unsigned long long numel;
  // Sizes and element strides, fastest-moving dim first.
  unsigned long long sizes[TR_COPY_MAX_DIMS];
  long long strides[TR_COPY_MAX_DIMS];
  int dims;
  int reserved;
};

template <typename T>
__global__ void strided_copy(CopyParams p) {
  const T* src = reinterpret_cast<const T*>(p.src);
  T* dst = reinterpret_cast<T*>(p.dst);
  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.numel;
       i += step) {
    unsigned long long rem = i;
    long long off = 0;
    for (int d = 0; d < p.dims; ++d) {
      const unsigned long long n = p.sizes[d];
      off += (long long)(rem % n) * p.strides[d];
      rem /= n;
    }
    dst[i] = src[off];
  }
}

}  // namespace tr_copy
