"""Which column-sum access patterns reach the read ceiling on this GPU.

A plain CUDA kernel (CuPy), apart from the library: each lane sums VEC
consecutive columns over a share of the rows, a block is (bx lanes, by
warps), grid.y CTAs split the rows (interleaved, or in contiguous ranges with
BLOCKED), UNROLL loads in flight a thread, and the grid sized for 1, 2 or 4
waves of full-occupancy CTAs. It writes each CTA-row's partials and skips the
final fold, so it bounds what a column plan can reach; beside it, a
grid-stride 16-byte read of the same bytes, timed the same way (CUDA events
over 30 pipelined launches, three input copies in turn).

    python3 scripts/column_read_patterns.py [DTYPE_ROWS ...]   # e.g. f64_16384

prints the best and worst configurations of each case as % of that read.
docs/performance-history.md ("Column plans on an H200: residency, not the access
pattern") has its results.
"""
import sys

import cupy as cp

src = r'''
#include <cuda_fp16.h>
template<typename T, int N> struct __align__(sizeof(T)*N) V { T v[N]; };
template<typename T> __device__ __forceinline__ float tof(T x){ return (float)x; }
template<> __device__ __forceinline__ float tof<__half>(__half x){ return __half2float(x); }
template<typename T> struct Acc { typedef float t; };
template<> struct Acc<double> { typedef double t; };
template<> struct Acc<long long> { typedef long long t; };
// block (BX lanes, BY warps); lane owns VEC consecutive columns; grid.y CTAs split rows.
// BLOCKED: CTA gy owns a contiguous range of rows; else rows interleave across CTAs.
template<typename T, int VEC, int UNROLL, int BLOCKED>
__global__ void colsum(const T* __restrict__ in, typename Acc<T>::t* __restrict__ part, long rows, long cols) {
  typedef typename Acc<T>::t A;
  long col = ((long)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  if (col >= cols) return;
  long r0, r1, step;
  if (BLOCKED) {
    long per = (rows + gridDim.y - 1) / gridDim.y;
    r0 = blockIdx.y * per + threadIdx.y; r1 = min(rows, (long)(blockIdx.y + 1) * per); step = blockDim.y;
  } else {
    r0 = (long)blockIdx.y * blockDim.y + threadIdx.y; r1 = rows; step = (long)blockDim.y * gridDim.y;
  }
  A acc[UNROLL][VEC];
  #pragma unroll
  for (int u = 0; u < UNROLL; u++) for (int j = 0; j < VEC; j++) acc[u][j] = 0;
  const V<T,VEC>* p = reinterpret_cast<const V<T,VEC>*>(in + col);
  long cv = cols / VEC;
  long r = r0;
  for (; r + (UNROLL-1)*step < r1; r += UNROLL*step) {
    V<T,VEC> x[UNROLL];
    #pragma unroll
    for (int u = 0; u < UNROLL; u++) x[u] = p[(r + u*step) * cv];
    #pragma unroll
    for (int u = 0; u < UNROLL; u++) for (int j = 0; j < VEC; j++) acc[u][j] += (A)tof(x[u].v[j]);
  }
  for (; r < r1; r += step) { V<T,VEC> x = p[r*cv]; for (int j = 0; j < VEC; j++) acc[0][j] += (A)tof(x.v[j]); }
  #pragma unroll
  for (int u = 1; u < UNROLL; u++) for (int j = 0; j < VEC; j++) acc[0][j] += acc[u][j];
  // partials: one row per (cta y, warp y) -- written, not folded (the fold is small)
  long prow = (long)blockIdx.y * blockDim.y + threadIdx.y;
  #pragma unroll
  for (int j = 0; j < VEC; j++) part[prow * cols + col + j] = acc[0][j];
}
// read ceiling: grid-stride 16-byte loads, 4 in flight
__global__ void readall(const int4* __restrict__ in, long n16, int* out) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x; long s = (long)gridDim.x * blockDim.x;
  int acc = 0;
  for (; i + 3*s < n16; i += 4*s) { int4 a = in[i], b = in[i+s], c = in[i+2*s], d = in[i+3*s]; acc ^= a.x^a.y^a.z^a.w^b.x^b.y^b.z^b.w^c.x^c.y^c.z^c.w^d.x^d.y^d.z^d.w; }
  for (; i < n16; i += s) { int4 a = in[i]; acc ^= a.x^a.y^a.z^a.w; }
  if (acc == 0x12345678) out[0] = acc;
}
'''
tnames = {'f64': ('double', cp.float64, 8), 'f32': ('float', cp.float32, 4), 'f16': ('__half', cp.float16, 2), 'i64': ('long long', cp.int64, 8)}
cases = [('f64', 4096, 4096), ('f64', 16384, 1024), ('f64', 65536, 256), ('f32', 65536, 1024), ('f32', 16384, 4096), ('f16', 4096, 32768), ('f16', 65536, 2048)]
if len(sys.argv) > 1: cases = [c for c in cases if f'{c[0]}_{c[1]}' in sys.argv[1:]]
configs = []
for vb in (8, 16, 32):
  for bx in (32, 64, 128, 256):
    for nt in (256, 512):
      by = nt // bx
      if by < 1: continue
      for un in (4, 8):
        if vb * un > 128: continue
        for blocked in (0, 1):
          for waves in (1, 2, 4):
            configs.append((vb, bx, by, un, blocked, waves))
names = set()
for dt, _, _ in cases:
  t, _, sz = tnames[dt]
  for vb, bx, by, un, bl, w in configs:
    if vb // sz >= 1: names.add(f'colsum<{t}, {vb//sz}, {un}, {bl}>')
mod = cp.RawModule(code=src, options=('-std=c++17',), name_expressions=sorted(names) + ['readall'])
props = cp.cuda.runtime.getDeviceProperties(0); sms = props['multiProcessorCount']
print(props['name'].decode(), sms, 'SMs')
def timeit(fn, bufs, reps=30):
  for i in range(5): fn(bufs[i % len(bufs)])
  s, e = cp.cuda.Event(), cp.cuda.Event(); s.record()
  for i in range(reps): fn(bufs[i % len(bufs)])
  e.record(); e.synchronize(); return cp.cuda.get_elapsed_time(s, e) * 1000 / reps
rd = mod.get_function('readall'); flag = cp.zeros(1, cp.int32)
for dt, rows, cols in cases:
  t, cpt, sz = tnames[dt]
  nbytes = rows * cols * sz
  bufs = [cp.ones(rows * cols, cpt) for _ in range(3)]
  ceil_us = timeit(lambda b: rd((sms * 8,), (256,), (b, cp.int64(nbytes // 16), flag)), bufs)
  res = []
  part = cp.zeros(sms * 64 * cols, cp.float64 if dt in ('f64',) else (cp.int64 if dt == 'i64' else cp.float32))
  for vb, bx, by, un, bl, w in configs:
    vec = vb // sz
    if vec < 1 or cols % (bx * vec): continue
    gx = cols // (bx * vec)
    slots = sms * (2048 // (bx * by))
    gy = max(1, min(rows // (by * 4), (slots * w) // gx))
    if gy * by * cols > part.size: continue
    f = mod.get_function(f'colsum<{t}, {vec}, {un}, {bl}>')
    us = timeit(lambda b: f((gx, gy), (bx, by), (b, part, cp.int64(rows), cp.int64(cols))), bufs)
    res.append((ceil_us / us, us, vb, bx, by, un, bl, w, gx, gy))
  res.sort(reverse=True)
  print(f'== {dt} [{rows},{cols}] {nbytes/1e6:.0f} MB ceiling {ceil_us:.1f} us = {nbytes/ceil_us/1e3:.0f} GB/s')
  for r in res[:12]: print('  %.0f%%  %.1f us  vecB=%d bx=%d by=%d unroll=%d blocked=%d waves=%d grid=(%d,%d)' % ((100*r[0],) + r[1:]))
  print('  worst:', ' | '.join('%.0f%% vecB=%d bx=%d by=%d un=%d bl=%d w=%d' % ((100*r[0],) + r[2:8]) for r in res[-3:]))
  # The shape of PyTorch's column blocks: 32 lanes, warps along y, rows interleaved.
  ours = [r for r in res if r[3] == 32 and r[6] == 0]
  print('  best bx=32 interleaved:', ' | '.join('%.0f%% vecB=%d by=%d un=%d w=%d' % (100*r[0], r[2], r[4], r[5], r[7]) for r in ours[:4]))
  del bufs
