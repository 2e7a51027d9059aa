"""What a plain kernel reaches on columns of 1, 2 and 4 rows, apart from the library.

Each thread of a plain CUDA kernel (CuPy) reads 16 bytes of each row of G
column vectors (a block's width apart, every load issued before any add),
adds them in f32 and stores the vector: the least a column plan of a few
rows can do. Blocks of 64 to 256 threads, G = 1, 2 or 4, at full occupancy
and at half (dynamic shared memory holds the SM to 1024 threads, the
residency of `reduce_kernel<64, 8>` at 64 registers); beside it, CuPy's own
sum (CUB where it applies). 256 MiB of input, CUDA events around each
launch, median of 50 after 5 warm-up launches, four input copies in turn.

    python3 scripts/short_columns_bound.py

docs/performance-history.md ("Columns of one and two rows: the thread's
instructions, not its loads") has its results.
"""
import cupy as cp
import numpy as np

from bench_common import cupy_median_us as median_us, half_sm_shared_memory

SRC = r'''
#include <cuda_fp16.h>
template <int G, int ROWS, typename T, int V>
__global__ void columns(const T* __restrict__ in, T* __restrict__ out, long long n, long long row_pitch) {
  struct alignas(16) vec { T v[V]; };
  const long long first = (long long)blockIdx.x * G * blockDim.x + threadIdx.x;
  vec vals[G][ROWS];
#pragma unroll
  for (int g = 0; g < G; g++) {
    const long long vi = first + (long long)g * blockDim.x;
    if (vi * V < n) {
#pragma unroll
      for (int r = 0; r < ROWS; r++) vals[g][r] = reinterpret_cast<const vec*>(in + r * row_pitch)[vi];
    }
  }
#pragma unroll
  for (int g = 0; g < G; g++) {
    const long long vi = first + (long long)g * blockDim.x;
    if (vi * V < n) {
      vec o;
#pragma unroll
      for (int j = 0; j < V; j++) {
        float acc = 0.f;
#pragma unroll
        for (int r = 0; r < ROWS; r++) acc += (float)vals[g][r].v[j];
        o.v[j] = (T)acc;
      }
      reinterpret_cast<vec*>(out)[vi] = o;
    }
  }
}
'''
TYPES = (("__half", 8, cp.float16), ("float", 4, cp.float32))
ROWS = (1, 2, 4)
GROUPS = (1, 2, 4)
# (threads a block, column vectors a thread, half occupancy)
CONFIGS = ((64, 1, 0), (64, 1, 1), (64, 2, 1), (64, 4, 1), (128, 1, 0), (128, 1, 1),
           (128, 2, 1), (256, 1, 0), (256, 2, 0), (256, 2, 1), (256, 4, 1))
TOTAL_BYTES = 256 << 20
COPIES = 4


def main():
    names = [f"columns<{g},{r},{t},{v}>" for t, v, _ in TYPES for r in ROWS for g in GROUPS]
    module = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
    for t, v, dtype in TYPES:
        size = np.dtype(dtype).itemsize
        for rows in ROWS:
            n = TOTAL_BYTES // size // rows
            ins = [cp.random.randn(rows, n).astype(dtype) for _ in range(COPIES)]
            outs = [cp.empty(n, dtype) for _ in range(COPIES)]
            want = ins[0].astype(cp.float32).sum(0)
            line = f"{np.dtype(dtype).name} [{rows}, {n}] over dim 0, µs:"
            for threads, groups, half in CONFIGS:
                kernel = module.get_function(f"columns<{groups},{rows},{t},{v}>")
                grid = (n // v + threads * groups - 1) // (threads * groups)
                smem = half_sm_shared_memory(kernel, threads, half)
                turn = [0]

                def launch():
                    i = turn[0] % COPIES
                    turn[0] += 1
                    kernel((grid,), (threads,), (ins[i], outs[i], cp.int64(n), cp.int64(n)), shared_mem=smem)

                launch()
                cp.cuda.Device().synchronize()
                got = outs[(turn[0] - 1) % COPIES].astype(cp.float32)
                assert turn[0] % COPIES == 1 and cp.allclose(got, want, atol=1e-2, rtol=1e-2), (rows, groups)
                line += f" {threads}x{groups}{' half' if half else ''} {median_us(launch):.1f};"
            turn = [0]

            def cupy_sum():
                i = turn[0] % COPIES
                turn[0] += 1
                if rows > 1:
                    ins[i].sum(0, out=outs[i])
                else:
                    cp.copyto(outs[i], ins[i][0])

            line += f" cupy {median_us(cupy_sum):.1f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
