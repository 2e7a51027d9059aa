//! GPU benchmark: one op (`--op`, default sum) over every case of
//! `benches/suite.json` or `benches/sweep.json` (`--cases`) on CUDA device 0,
//! timed the way the peers (torch, CuPy) are timed by
//! `scripts/compare_gpu.py`, next to a read-stream ceiling measured in the
//! same run over the same bytes.
//!
//! `cargo bench --bench gpu_reduce [-- [--op NAME] [--cases suite|sweep|FILE.json] [--quick] [--json PATH] [CASE-SUBSTRING ...]]`
//!
//! Timing: a CUDA event recorded on the default stream just before and just
//! after each call from the host, 5 warm-up calls, the median of 50; so the
//! host-side cost of the call counts, as it does for the peers. Cases with
//! `rotate` > 1 (the sweep's small inputs) cycle through that many copies of
//! the input, so each call reads from DRAM rather than L2, and their ceiling
//! cycles through as many windows of its buffer. Each result is first checked
//! against the op's f64 reference (`common::reference`): a wrong result is
//! reported as FAILED and the process exits non-zero after the table.
//!
//! Without a CUDA driver or device it prints a line and exits 0, so that
//! `cargo bench` works everywhere.

mod common;

use common::reference::OpSpec;
use common::{check_output, expected, gbs, geomean, median, ops, Args, Case};
use cudarc::driver::sys::{CUdevice_attribute, CUevent_flags};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, CudaView, DriverError,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;
use tensor_reduce::cuda::plan::DeviceProps;
use tensor_reduce::reduce::ReduceOp;
use tensor_reduce::{DType, Device, Tensor};

type BoxError = Box<dyn std::error::Error>;

/// The peers' protocol.
const WARMUP: usize = 5;
const RUNS: usize = 50;
/// Launches of the ceiling kernel per grid size; the best one counts, as in
/// the suite's own ceiling measurement.
const CEILING_RUNS: usize = 17;
/// Bytes of the headline read-stream ceiling.
const CEILING_BYTES: usize = 1 << 30;

/// A plain vectorised read: grid-stride over float4, four independent loads in
/// flight per thread, one atomicAdd per block. What a sum kernel can at best
/// approach on this GPU for a given number of bytes. `fill` gives the buffer
/// non-zero contents so that nothing about zero pages flatters the read.
const CEILING_SRC: &str = r#"
extern "C" __global__ void fill(float4* x, unsigned long long n4) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        unsigned int h = (unsigned int)(i * 2654435761ull);
        float v = (float)(h >> 8) * (1.0f / 16777216.0f) - 0.5f;
        x[i] = make_float4(v, -v, 0.5f * v, 0.25f - v);
    }
}

extern "C" __global__ void __launch_bounds__(256) read_sum(const float4* __restrict__ x, unsigned long long n4, float* out) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 v0 = __ldg(x + i);
        float4 v1 = __ldg(x + i + stride);
        float4 v2 = __ldg(x + i + 2 * stride);
        float4 v3 = __ldg(x + i + 3 * stride);
        a0 += (v0.x + v0.y) + (v0.z + v0.w);
        a1 += (v1.x + v1.y) + (v1.z + v1.w);
        a2 += (v2.x + v2.y) + (v2.z + v2.w);
        a3 += (v3.x + v3.y) + (v3.z + v3.w);
    }
    for (; i < n4; i += stride) {
        float4 v = __ldg(x + i);
        a0 += (v.x + v.y) + (v.z + v.w);
    }
    float acc = (a0 + a1) + (a2 + a3);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    __shared__ float warp_sums[32];
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.f;
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (threadIdx.x == 0) atomicAdd(out, acc);
    }
}

// read_sum's loop with a write stream beside it: y[j] is written by the
// thread that reads x[j], so where the result is as large as the input the
// two streams interleave throughout, as a reduction that writes one output
// per input must. The stored values are the loaded ones, so no load is dead.
extern "C" __global__ void __launch_bounds__(256) read_write(const float4* __restrict__ x, unsigned long long n4,
                                                             float4* __restrict__ y, unsigned long long m4) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    const unsigned long long n = n4 > m4 ? n4 : m4;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n; i += 4 * stride) {
        float4 v[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const unsigned long long j = i + k * stride;
            v[k] = j < n4 ? __ldg(x + j) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const unsigned long long j = i + k * stride;
            if (j < m4) y[j] = v[k];
        }
    }
}
"#;

/// Everything needed to time work on the default stream of device 0.
struct Gpu {
    ctx: Arc<CudaContext>,
    /// The null stream of the primary context: the stream our `sum` runs on,
    /// so events recorded here bracket its work.
    stream: Arc<CudaStream>,
    start: CudaEvent,
    end: CudaEvent,
    sm_count: u32,
}

impl Gpu {
    fn new() -> Result<Gpu, BoxError> {
        let ctx = CudaContext::new(0)?;
        let stream = ctx.default_stream();
        // Events made with `None` have timing disabled; elapsed time needs the default flags.
        let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let sm_count =
            ctx.attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        Ok(Gpu {
            ctx,
            stream,
            start,
            end,
            sm_count,
        })
    }

    /// Microseconds between events recorded around `f`, which must only
    /// enqueue work on the default stream.
    fn event_us<R>(&self, f: impl FnOnce() -> R) -> Result<(f64, R), BoxError> {
        self.start.record(&self.stream)?;
        let r = f();
        self.end.record(&self.stream)?;
        let ms = self.start.elapsed_ms(&self.end)?;
        Ok((ms as f64 * 1e3, r))
    }

    /// The launch-planning properties of this device, as the library
    /// reads them.
    fn props(&self) -> Result<DeviceProps, BoxError> {
        Ok(tensor_reduce::cuda::device_props(0)?)
    }
}

/// The read-stream ceiling kernel over a 1 GiB buffer, measured per size and
/// rotation.
struct Ceiling {
    read_sum: CudaFunction,
    read_write: CudaFunction,
    buf: CudaSlice<f32>,
    out: CudaSlice<f32>,
    /// `read_write`'s destination, grown to the largest result asked for.
    written: Option<CudaSlice<f32>>,
    /// GB/s by (byte count, windows rotated through), measured once each.
    cache: BTreeMap<(usize, usize), f64>,
    /// Best µs of `read_write` by (bytes read, bytes written, windows).
    rw_cache: BTreeMap<(usize, usize, usize), f64>,
}

impl Ceiling {
    fn new(gpu: &Gpu) -> Result<Ceiling, BoxError> {
        let (major, minor) = gpu.ctx.compute_capability()?;
        // NVRTC's options want a 'static str; this runs once.
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        let ptx = compile_ptx_with_opts(
            CEILING_SRC,
            CompileOptions {
                arch: Some(arch),
                ..Default::default()
            },
        )?;
        let module = gpu.ctx.load_module(ptx)?;
        let fill = module.load_function("fill")?;
        let read_sum = module.load_function("read_sum")?;
        let read_write = module.load_function("read_write")?;
        let mut buf = gpu.stream.alloc_zeros::<f32>(CEILING_BYTES / 4)?;
        let n4 = (CEILING_BYTES / 16) as u64;
        let mut b = gpu.stream.launch_builder(&fill);
        b.arg(&mut buf).arg(&n4);
        // SAFETY: `fill` takes (float4*, u64) and writes only below n4 float4s of `buf`.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (gpu.sm_count * 8, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        let out = gpu.stream.alloc_zeros::<f32>(1)?;
        gpu.stream.synchronize()?;
        Ok(Ceiling {
            read_sum,
            read_write,
            buf,
            out,
            written: None,
            cache: BTreeMap::new(),
            rw_cache: BTreeMap::new(),
        })
    }

    /// The grid sizes every ceiling is measured over, for `n4` float4s.
    fn grids(gpu: &Gpu, n4: u64) -> impl Iterator<Item = LaunchConfig> + '_ {
        [4u32, 8, 16]
            .into_iter()
            .map(move |blocks_per_sm| LaunchConfig {
                grid_dim: (
                    (gpu.sm_count * blocks_per_sm)
                        .min(n4.div_ceil(256) as u32)
                        .max(1),
                    1,
                    1,
                ),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            })
    }

    /// The best µs of `launch` over [`Ceiling::grids`] for `grid_n4`
    /// float4s, each launch given the next of `rotate` windows of `n4`
    /// float4s, `window4` apart, of `buf` (`windows`'s triple).
    fn best_us(
        gpu: &Gpu,
        buf: &CudaSlice<f32>,
        (n4, window4, rotate): (u64, usize, usize),
        grid_n4: u64,
        mut launch: impl FnMut(&CudaView<f32>, LaunchConfig) -> Result<(), DriverError>,
    ) -> Result<f64, BoxError> {
        let mut best_us = f64::INFINITY;
        for cfg in Ceiling::grids(gpu, grid_n4) {
            for run in 0..CEILING_RUNS + 3 {
                let start = (run % rotate) * window4 * 4;
                let window = buf.slice(start..start + n4 as usize * 4);
                let (us, launched) = gpu.event_us(|| launch(&window, cfg))?;
                launched?;
                // The first launches of each grid warm clocks and caches.
                if run >= 3 {
                    best_us = best_us.min(us);
                }
            }
        }
        Ok(best_us)
    }

    /// Float4s of the buffer `bytes` reads (at least one), the float4s
    /// between the starts of consecutive windows (256-byte aligned, like
    /// allocations), and how many of those windows `rotate` may use.
    fn windows(bytes: usize, rotate: usize) -> (u64, usize, usize) {
        let bytes = bytes.min(CEILING_BYTES);
        let window4 = (bytes / 16).max(1).next_multiple_of(16);
        let rotate = rotate.clamp(1, CEILING_BYTES / 16 / window4);
        ((bytes / 16).max(1) as u64, window4, rotate)
    }

    /// The best µs of a plain read of `read` bytes that writes `written`
    /// bytes beside it (`read_write`), over the same grids and windows as
    /// [`Ceiling::gbs`]: the time a reduction that writes its results
    /// cannot beat. `None` where the result is larger than the buffer.
    fn read_write_us(
        &mut self,
        gpu: &Gpu,
        read: usize,
        written: usize,
        rotate: usize,
    ) -> Result<Option<f64>, BoxError> {
        if written > CEILING_BYTES {
            return Ok(None);
        }
        let (n4, window4, rotate) = Ceiling::windows(read, rotate);
        let m4 = (written / 16).max(1) as u64;
        if let Some(&us) = self.rw_cache.get(&(read, written, rotate)) {
            return Ok(Some(us));
        }
        if self
            .written
            .as_ref()
            .is_none_or(|w| (w.len() as u64) < m4 * 4)
        {
            // The smaller buffer is freed before the larger is allocated.
            self.written = None;
            self.written = Some(gpu.stream.alloc_zeros::<f32>(m4 as usize * 4)?);
        }
        let dst = self.written.as_mut().expect("allocated above");
        let f = &self.read_write;
        let best_us = Ceiling::best_us(
            gpu,
            &self.buf,
            (n4, window4, rotate),
            n4.max(m4),
            |window, cfg| {
                let mut b = gpu.stream.launch_builder(f);
                b.arg(window).arg(&n4).arg(&mut *dst).arg(&m4);
                // SAFETY: `read_write` takes (const float4*, u64, float4*, u64), reads below
                // n4 float4s of `window` and writes below m4 float4s of `dst`, which holds
                // at least m4 * 4 floats; both are 16-byte aligned.
                unsafe { b.launch(cfg) }.map(drop)
            },
        )?;
        self.rw_cache.insert((read, written, rotate), best_us);
        Ok(Some(best_us))
    }

    /// The best read rate over `bytes` of the buffer (whole float4s), over a
    /// few grid sizes, so the ceiling is not an artefact of one grid. With
    /// `rotate` > 1 each launch reads the next of that many disjoint windows,
    /// as the case's calls read the next copy of its input.
    fn gbs(&mut self, gpu: &Gpu, bytes: usize, rotate: usize) -> Result<f64, BoxError> {
        let (n4, window4, rotate) = Ceiling::windows(bytes, rotate);
        if let Some(&g) = self.cache.get(&(bytes, rotate)) {
            return Ok(g);
        }
        let (f, out) = (&self.read_sum, &mut self.out);
        let best_us =
            Ceiling::best_us(gpu, &self.buf, (n4, window4, rotate), n4, |window, cfg| {
                let mut b = gpu.stream.launch_builder(f);
                b.arg(window).arg(&n4).arg(&mut *out);
                // SAFETY: `read_sum` takes (const float4*, u64, float*) and reads below
                // n4 float4s, which lie inside `window` (a view of `buf`, 16-byte aligned).
                unsafe { b.launch(cfg) }.map(drop)
            })?;
        let g = gbs(n4 * 16, best_us);
        self.cache.insert((bytes, rotate), g);
        Ok(g)
    }
}

/// One case's outcome.
struct Row {
    case: Case,
    /// Median µs per call, when the result was right and timing worked.
    our_us: Option<f64>,
    min_us: Option<f64>,
    ceiling_gbs: Option<f64>,
    /// Bytes of the call's results, once it ran.
    output_bytes: Option<u64>,
    /// Best µs of the read-write ceiling over the input's and the results'
    /// bytes (`Ceiling::read_write_us`).
    read_write_us: Option<f64>,
    ok: bool,
    /// Why the op does not apply to this case (torch would refuse it too).
    skipped: Option<String>,
    worst_err_over_tol: f64,
    detail: String,
    plan: String,
}

impl Row {
    /// A row not (yet) timed: not ok until the check and the timing succeed.
    fn untimed(case: &Case, detail: String, plan: String) -> Row {
        Row {
            case: case.clone(),
            our_us: None,
            min_us: None,
            ceiling_gbs: None,
            output_bytes: None,
            read_write_us: None,
            ok: false,
            skipped: None,
            worst_err_over_tol: f64::NAN,
            detail,
            plan,
        }
    }
}

/// The launch plan `spec` runs on `x`'s device, where the library can
/// explain the op.
fn explain(spec: &OpSpec, x: &Tensor, dims: &[isize]) -> String {
    match ReduceOp::from_name(spec.name) {
        Some(op) => x
            .device_plan(op, dims, false)
            .map_or_else(|e| format!("(no plan: {e})"), |p| p.to_string()),
        None => String::new(),
    }
}

/// Times `spec` on one case: check first, then 5 warm-up calls and 50 timed
/// ones, cycling through `case.rotate` copies of the input.
fn time_case(gpu: &Gpu, spec: &OpSpec, case: &Case, runs: (usize, usize)) -> Result<Row, BoxError> {
    if let Some(why) = ops::not_applicable(spec, case.dims.len(), case.dtype) {
        let mut row = Row::untimed(case, String::new(), String::new());
        row.skipped = Some(why);
        row.ok = true;
        return Ok(row);
    }
    let call = ops::call(spec.name, &case.dims).expect("run checked the op is wired");
    let (base, x_host) = case.make_input()?;
    drop(x_host);
    let want = expected(case, &base, spec)?;
    // One upload per copy: each lives in its own device allocation.
    let xs = (0..case.rotate)
        .map(|_| Ok(case.view.apply(&base.to_device(Device::Cuda(0))?)?))
        .collect::<Result<Vec<Tensor>, BoxError>>()?;
    drop(base);
    let mut row = Row::untimed(case, String::new(), explain(spec, &xs[0], &case.dims));

    let first = match call(&xs[0]) {
        Ok(y) => y,
        Err(e) => {
            row.detail = format!("{} failed: {e}", spec.name);
            return Ok(row);
        }
    };
    let c = check_output(&want, &first)?;
    row.output_bytes = Some(first.bytes());
    drop((first, want));
    row.worst_err_over_tol = c.worst_err_over_tol;
    if !c.ok {
        row.detail = c.detail;
        return Ok(row);
    }

    let (warmup, n) = runs;
    for i in 0..warmup {
        call(&xs[i % xs.len()])?;
    }
    gpu.stream.synchronize()?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        // The result is dropped after the end event, so freeing it is not timed.
        let (us, y) = gpu.event_us(|| call(&xs[i % xs.len()]))?;
        y?;
        times.push(us);
    }
    row.our_us = Some(median(&times));
    row.min_us = times.iter().copied().reduce(f64::min);
    row.ok = true;
    Ok(row)
}

/// Host overhead of one call: GPU-event median, wall-clock median of the
/// call alone (after a sync, so no earlier work is queued), and of the call
/// plus a sync.
fn host_overhead(
    gpu: &Gpu,
    x: &Tensor,
    call: &ops::Call,
    runs: (usize, usize),
) -> Result<Value, BoxError> {
    let (warmup, n) = runs;
    for _ in 0..warmup {
        call(x)?;
    }
    gpu.stream.synchronize()?;
    let (mut event, mut wall, mut wall_sync) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let (us, y) = gpu.event_us(|| call(x))?;
        y?;
        event.push(us);
        gpu.stream.synchronize()?;
        let t = Instant::now();
        let y = call(x)?;
        wall.push(t.elapsed().as_secs_f64() * 1e6);
        gpu.stream.synchronize()?;
        wall_sync.push(t.elapsed().as_secs_f64() * 1e6);
        drop(y);
    }
    Ok(json!({
        "shape": x.shape(),
        "event_us": median(&event),
        "wall_call_us": median(&wall),
        "wall_call_sync_us": median(&wall_sync),
    }))
}

/// Today's date in UTC, `YYYY-MM-DD`, without a date crate.
fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Howard Hinnant's civil_from_days.
    let z = (secs / 86400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn driver_version() -> Option<i32> {
    let mut v = 0;
    // SAFETY: writes one int; the driver library is loaded (checked before).
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
    (r == cudarc::driver::sys::CUresult::CUDA_SUCCESS).then_some(v)
}

fn run(args: &Args, spec: &OpSpec, cases: &[Case]) -> Result<ExitCode, BoxError> {
    let gpu = Gpu::new()?;
    Device::cuda(0)?;
    let props = gpu.props()?;
    let runs = if args.quick { (2, 10) } else { (WARMUP, RUNS) };
    eprintln!(
        "gpu_reduce: {} over {} {} cases, {} on {} ({} SMs), {} warm-up + median of {}",
        spec.name,
        cases.len(),
        args.cases.name(),
        utc_date(),
        props.name,
        gpu.sm_count,
        runs.0,
        runs.1
    );

    let mut ceiling = match Ceiling::new(&gpu) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("read-stream ceiling unavailable ({e}); the table will have no % of ceiling");
            None
        }
    };
    let ceiling_1gib = match &mut ceiling {
        Some(c) => Some(c.gbs(&gpu, CEILING_BYTES, 1)?),
        None => None,
    };
    if let Some(g) = ceiling_1gib {
        eprintln!("read-stream ceiling over 1 GiB: {g:.0} GB/s");
    }

    let mut rows = Vec::new();
    for case in cases {
        let t = Instant::now();
        let mut row = match time_case(&gpu, spec, case, runs) {
            Ok(row) => row,
            Err(e) => Row::untimed(case, format!("error: {e}"), String::new()),
        };
        // Between cases the inputs are dropped; make sure their memory is
        // back before the next (up to 1 GiB) allocation, and that a failed
        // case left no error pending.
        gpu.stream.synchronize()?;
        if let (Some(c), true) = (&mut ceiling, row.skipped.is_none()) {
            row.ceiling_gbs = c
                .gbs(&gpu, case.input_bytes as usize, case.rotate)
                .map_err(|e| eprintln!("  ceiling for {}: {e}", case.name))
                .ok();
            if let Some(written) = row.output_bytes {
                row.read_write_us = c
                    .read_write_us(
                        &gpu,
                        case.input_bytes as usize,
                        written as usize,
                        case.rotate,
                    )
                    .map_err(|e| eprintln!("  read-write ceiling for {}: {e}", case.name))
                    .ok()
                    .flatten();
            }
        }
        let status = match (&row.skipped, row.ok) {
            (Some(_), _) => "n/a   ",
            (None, true) => "ok    ",
            (None, false) => "FAILED",
        };
        eprintln!(
            "  {:<30} {status}  {:>10}  ({:.1} s){}",
            case.name,
            row.our_us.map_or("–".into(), |u| format!("{u:.1} µs")),
            t.elapsed().as_secs_f64(),
            match (&row.skipped, row.ok) {
                (Some(why), _) => format!("\n    {why}"),
                (None, false) => format!("\n    {}", row.detail),
                (None, true) => String::new(),
            }
        );
        rows.push(row);
    }

    let tiny = common::load_suite()
        .into_iter()
        .find(|c| c.name == "tiny_2_3_4_5")
        .expect("the suite has tiny_2_3_4_5");
    let tiny_x = tiny.view.apply(&Tensor::randn(
        &tiny.base_shape,
        tiny.dtype,
        Device::Cuda(0),
        common::SEED,
    )?)?;
    let one = Tensor::randn(&[1], DType::F32, Device::Cuda(0), common::SEED)?;
    let overhead_of = |x: &Tensor, dims: &[isize]| -> Value {
        let call = ops::call(spec.name, dims).expect("run checked the op is wired");
        host_overhead(&gpu, x, &call, runs).unwrap_or_else(|e| json!({"error": e.to_string()}))
    };
    let overhead = json!({
        "tiny_2_3_4_5": overhead_of(&tiny_x, &tiny.dims),
        "one_element": overhead_of(&one, &[0]),
    });

    println!();
    println!(
        "op `{}`, {} cases; reads: where a repeated call reads its input (DRAM: ≥ 128 MiB, or cycling through \
         copies totalling ≥ 128 MiB; L2-warm: one small buffer), the ceiling read the same way",
        spec.name,
        args.cases.name()
    );
    println!();
    println!("| case | dtype | input MB | result MB | reads | ours µs | GB/s | ceiling GB/s | % of ceiling | % of read-write ceiling |");
    println!("|---|---|---:|---:|---|---:|---:|---:|---:|---:|");
    let (mut pcts, mut rw_pcts) = (Vec::new(), Vec::new());
    let percent = |p: Option<f64>| p.map_or("–".into(), |p| format!("{p:.0}%"));
    for r in &rows {
        let b = r.case.input_bytes;
        let (us, g, pct, rw_pct) = match (r.our_us, &r.skipped) {
            (_, Some(_)) => ("n/a".into(), "–".into(), None, None),
            (Some(u), None) => (
                format!("{u:.1}"),
                format!("{:.0}", gbs(b, u)),
                r.ceiling_gbs.map(|c| 100.0 * gbs(b, u) / c),
                r.read_write_us.map(|c| 100.0 * c / u),
            ),
            (None, None) => ("FAILED".into(), "–".into(), None, None),
        };
        pcts.extend(pct);
        rw_pcts.extend(rw_pct);
        let ceil = r.ceiling_gbs.map_or("–".into(), |c| format!("{c:.0}"));
        println!(
            "| {} | {} | {:.1} | {} | {} | {us} | {g} | {ceil} | {} | {} |",
            r.case.name,
            r.case.dtype.name(),
            b as f64 / 1e6,
            r.output_bytes
                .map_or("–".into(), |o| format!("{:.1}", o as f64 / 1e6)),
            r.case.reads_from(),
            percent(pct),
            percent(rw_pct),
        );
    }
    let timed: Vec<f64> = rows.iter().filter_map(|r| r.our_us).collect();
    println!(
        "| **geometric mean** | | | | | {} | | | {} | {} |",
        geomean(&timed).map_or("–".into(), |u| format!("{u:.1}")),
        percent(geomean(&pcts)),
        percent(geomean(&rw_pcts)),
    );
    println!();
    if let Some(g) = ceiling_1gib {
        println!(
            "read-stream ceiling (1 GiB, float4 x4 in flight, best of {CEILING_RUNS}): {g:.0} GB/s"
        );
    }
    for (k, v) in overhead.as_object().expect("built as an object") {
        println!("host overhead {k}: {v}");
    }
    let failed: Vec<&str> = rows
        .iter()
        .filter(|r| !r.ok)
        .map(|r| r.case.name.as_str())
        .collect();
    println!("failed: {failed:?}");

    if let Some(path) = &args.json {
        let doc = json!({
            "benchmark": "gpu_reduce",
            "op": spec.name,
            "case_set": args.cases.name(),
            "quick": args.quick,
            "date": utc_date(),
            "commit": common::git_commit(),
            "device": props.name,
            "sm_count": gpu.sm_count,
            "compute_capability": [props.compute_capability.0, props.compute_capability.1],
            "driver_version": driver_version(),
            "timing": format!("CUDA events on the default stream around each call, {} warm-up, median of {}; cases with rotate > 1 cycle through that many copies of the input", runs.0, runs.1),
            "warmup": runs.0,
            "runs": runs.1,
            "ceiling_1gib_gbs": ceiling_1gib,
            "read_write_ceiling_how": "read_sum's loop with a store beside each load: the case's input bytes read and its results' bytes written, y[j] by the thread that reads x[j], same grids, windows and launches as the read ceiling",
            "ceiling_how": format!("grid-stride float4 sum, 4 loads in flight per thread, 256 threads x {{4,8,16}} blocks per SM, one atomicAdd per block, best of {CEILING_RUNS} launches; per case over the case's byte count, cycling through `rotate` disjoint windows like the case"),
            "host_overhead": overhead,
            "cases": rows.iter().map(|r| json!({
                "name": r.case.name,
                "dtype": r.case.dtype.name(),
                "base_shape": r.case.base_shape,
                "view": r.case.view_name,
                "dims": r.case.dims,
                "input_bytes": r.case.input_bytes,
                "rotate": r.case.rotate,
                "reads": r.case.reads_from(),
                "our_us": r.our_us,
                "min_us": r.min_us,
                "gbs": r.our_us.map(|u| gbs(r.case.input_bytes, u)),
                "ceiling_gbs": r.ceiling_gbs,
                "output_bytes": r.output_bytes,
                "read_write_ceiling_us": r.read_write_us,
                "ok": r.ok,
                "skipped": r.skipped,
                "worst_err_over_tol": if r.worst_err_over_tol.is_finite() { Some(r.worst_err_over_tol) } else { None },
                "detail": r.detail,
                "plan": r.plan,
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
        eprintln!("wrote {path}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.serve {
        eprintln!("gpu_reduce: --serve is cpu_reduce's (the GPU peers are timed by events, not interleaved)");
        return ExitCode::from(2);
    }
    if let Err(e) = common::reference::self_check() {
        eprintln!("gpu_reduce: {e}");
        return ExitCode::FAILURE;
    }
    let spec = match ops::lookup(&args.op) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gpu_reduce: {e}");
            return ExitCode::from(2);
        }
    };
    let cases = args.selected_cases();
    if args.list {
        common::print_case_list(&cases);
        return ExitCode::SUCCESS;
    }
    // SAFETY: only probes for the driver library; without this check cudarc
    // panics on first use under dynamic loading.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    if !present || CudaContext::device_count().unwrap_or(0) < 1 {
        println!("no CUDA device: skipping GPU benchmark");
        return ExitCode::SUCCESS;
    }
    match run(&args, spec, &cases) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpu_reduce: {e}");
            ExitCode::FAILURE
        }
    }
}
