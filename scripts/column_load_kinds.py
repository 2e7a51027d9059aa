"""What the kind of load costs a plain column kernel: generic, global, .cg, .cs or .nc.

Each thread of a plain CUDA kernel (CuPy) reads one 16-byte vector of each
of ROWS rows of a column block (rows 1, 2 and 4), adds them in f32 and
stores the vector. The addresses arrive as integers, as the library's do,
so a plain dereference is a generic load (LD); the other modes load through
`ld.global` (inline PTX), `__ldcg`, `__ldcs` or `__ldg`, and store through
`st.global` or `__stcs`. Blocks of 64 threads held to 1024 threads an SM
(the residency of `reduce_kernel<64, 8>`), and of 128 at full occupancy.
256 MiB of input, CUDA events around each launch, median of 50 after 5
warm-up launches, four input copies in turn, two rounds.

    python3 scripts/column_load_kinds.py

docs/performance-history.md ("Global instead of generic loads, and ShortRows at 3
and 2 blocks an SM") has its results.
"""
import cupy as cp
import numpy as np

from bench_common import cupy_median_us as median_us, half_sm_shared_memory

SRC = r'''
#include <cuda_fp16.h>
template <int MODE, int ROWS, typename T, int V>
__global__ void columns(unsigned long long in_addr, unsigned long long out_addr, long long n, long long row_pitch, long long zero) {
  struct alignas(16) vec { T v[V]; };
  const long long vi = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (vi * V >= n) return;
  vec vals[ROWS];
  const char* base = reinterpret_cast<const char*>(in_addr + zero);
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    const vec* p = reinterpret_cast<const vec*>(base + r * row_pitch * sizeof(T)) + vi;
    uint4 w;
    if (MODE == 0) {
      vals[r] = *p;
      continue;
    } else if (MODE == 1) {
      w = __ldcg(reinterpret_cast<const uint4*>(p));
    } else if (MODE == 2) {
      w = __ldcs(reinterpret_cast<const uint4*>(p));
    } else if (MODE == 3) {
      w = __ldg(reinterpret_cast<const uint4*>(p));
    } else {
      asm("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(w.x), "=r"(w.y), "=r"(w.z), "=r"(w.w) : "l"(p));
    }
    vals[r] = *reinterpret_cast<vec*>(&w);
  }
  vec o;
#pragma unroll
  for (int j = 0; j < V; j++) {
    float acc = 0.f;
#pragma unroll
    for (int r = 0; r < ROWS; r++) acc += (float)vals[r].v[j];
    o.v[j] = (T)acc;
  }
  vec* q = reinterpret_cast<vec*>(out_addr + zero) + vi;
  uint4 ow = *reinterpret_cast<uint4*>(&o);
  if (MODE == 0) {
    *q = o;
  } else if (MODE == 4) {
    asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};" :: "l"(q), "r"(ow.x), "r"(ow.y), "r"(ow.z), "r"(ow.w) : "memory");
  } else {
    __stcs(reinterpret_cast<uint4*>(q), ow);
  }
}
'''
MODES = {0: "generic", 4: "global", 1: "cg+st.cs", 2: "cs+st.cs", 3: "nc+st.cs"}
TYPES = (("__half", 8, cp.float16), ("float", 4, cp.float32))
TOTAL_BYTES = 256 << 20
COPIES = 4


def main():
    names = [f"columns<{m},{r},{t},{v}>" for t, v, _ in TYPES for r in (1, 2, 4) for m in MODES]
    module = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
    for rnd in range(2):
        for t, v, dtype in TYPES:
            size = np.dtype(dtype).itemsize
            for rows in (1, 2, 4):
                n = TOTAL_BYTES // size // rows
                ins = [cp.random.randn(rows, n).astype(dtype) for _ in range(COPIES)]
                outs = [cp.empty(n, dtype) for _ in range(COPIES)]
                want = ins[0].astype(cp.float32).sum(0)
                line = f"round {rnd} {np.dtype(dtype).name} [{rows}, {n}]:"
                for threads, half in ((64, 1), (128, 0)):
                    for mode, mname in MODES.items():
                        kernel = module.get_function(f"columns<{mode},{rows},{t},{v}>")
                        grid = (n // v + threads - 1) // threads
                        smem = half_sm_shared_memory(kernel, threads, half)
                        turn = [0]

                        def launch():
                            i = turn[0] % COPIES
                            turn[0] += 1
                            kernel((grid,), (threads,), (cp.uint64(ins[i].data.ptr), cp.uint64(outs[i].data.ptr), cp.int64(n), cp.int64(n), cp.int64(0)), shared_mem=smem)

                        launch()
                        cp.cuda.Device().synchronize()
                        got = outs[0].astype(cp.float32)
                        assert cp.allclose(got, want, atol=1e-2, rtol=1e-2), (rows, mode)
                        line += f" {threads}{'h' if half else ''}/{mname} {median_us(launch):.1f};"
                print(line, flush=True)
                del ins, outs


if __name__ == "__main__":
    main()
