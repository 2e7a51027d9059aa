//! The result storage the reduction trees write into.
//!
//! Each block of outputs is reduced into a small buffer of accumulators,
//! then projected (torch's `project`) and cast straight into the result.
//! No output-sized buffer of accumulators exists: with millions of short
//! rows that buffer was a second result-sized allocation, written and read
//! once more (three times the result's size for Welford's state over an
//! f32 result), and it cost as much as the reduction itself. For the same
//! reason the results start uninitialised ([`UninitStorage`]): each run of
//! outputs is written once, by consuming it, and the trees hand back a
//! [`Written`] count that proves every output was. Results larger than the
//! caches are written with streaming stores ([`stream`]).

use super::isa::dispatch;
use super::ops::{Compute, Projected, ReduceOps};
use super::simd::{f32_to_bf16, f32_to_f16};
use super::stream;
use super::tree::maybe_join;
use crate::tensor::storage::UninitStorage;
use crate::{with_dtype, DType, Element};
use std::any::TypeId;
use std::mem::MaybeUninit;
use std::ops::Add;

/// Outputs projected per pass over the stage buffer: small enough for the
/// stack (and L1) whatever the accumulator, large enough that the dtype
/// dispatch of each pass is negligible.
const STAGE: usize = 256;

/// A run of consecutive elements of one result, as (not yet written)
/// bytes of its dtype.
struct Column<'a> {
    bytes: &'a mut [MaybeUninit<u8>],
    dtype: DType,
}

impl<'a> Column<'a> {
    fn split_at(self, mid: usize) -> (Column<'a>, Column<'a>) {
        let at = mid
            .checked_mul(self.dtype.size_in_bytes())
            .filter(|&at| at <= self.bytes.len())
            .expect("internal: outputs split within their run");
        let (a, b) = self.bytes.split_at_mut(at);
        let dtype = self.dtype;
        (Column { bytes: a, dtype }, Column { bytes: b, dtype })
    }

    fn typed<O: Element>(&mut self) -> &mut [MaybeUninit<O>] {
        assert_eq!(O::DTYPE, self.dtype, "internal: output access by dtype");
        let (ptr, len) = (self.bytes.as_mut_ptr(), self.bytes.len());
        assert!(
            ptr as usize % std::mem::align_of::<O>() == 0 && len % std::mem::size_of::<O>() == 0,
            "internal: output runs split at element boundaries"
        );
        // SAFETY: the bytes are an aligned run of whole elements of `O`
        // (checked above; storage is 8-byte aligned and only ever split at
        // element boundaries), `MaybeUninit<O>` needs no valid value, and
        // `&mut self` is exclusive.
        unsafe {
            std::slice::from_raw_parts_mut(
                ptr as *mut MaybeUninit<O>,
                len / std::mem::size_of::<O>(),
            )
        }
    }

    /// Projects `accs` and writes them as this run's elements: with
    /// streaming stores where `streamed` ([`stream`]), through a stage of
    /// at most [`STAGE`] of them whose ends, but for the run's own, fall on
    /// cache-line boundaries ([`Column::lead`]).
    fn write<W: Compute, R: ReduceOps<W>>(
        &mut self,
        op: &R,
        accs: &[R::Acc],
        second: bool,
        streamed: bool,
    ) {
        if !streamed {
            return self.write_in_place(op, accs, second);
        }
        let dtype = self.dtype;
        let elem = dtype.size_in_bytes();
        let mut stage = [MaybeUninit::<u64>::uninit(); STAGE];
        let mut done = 0;
        for m in staged_lengths(self.lead(), accs.len()) {
            let (accs, bytes) = (&accs[done..done + m], m * elem);
            // SAFETY: the stage is STAGE words, at least `bytes` bytes (no
            // element is wider than a word), and any bytes may be uninit.
            let staged = unsafe {
                std::slice::from_raw_parts_mut(stage.as_mut_ptr().cast::<MaybeUninit<u8>>(), bytes)
            };
            Column {
                bytes: staged,
                dtype,
            }
            .write_in_place(op, accs, second);
            // SAFETY: `write_in_place` wrote every element of the stage's
            // first `bytes` bytes, each a value of `dtype`, whose bytes
            // are all initialised (no dtype has padding).
            let staged = unsafe { std::slice::from_raw_parts(stage.as_ptr().cast::<u8>(), bytes) };
            stream::copy_streaming(&mut self.bytes[done * elem..][..bytes], staged);
            done += m;
        }
    }

    /// Elements from this run's start to the next cache-line boundary
    /// (possibly past the run's end: [`staged_lengths`] caps it).
    /// Streamed stages start there, so that inside a run a line is written
    /// by the streaming stores of one stage, not partly by those and partly
    /// by ordinary stores (which sends it to memory in pieces). In rows of
    /// 3 f32, whose blocks start 4 bytes past a 16-byte boundary, every
    /// stage did that before stages started on lines, and streaming ran at
    /// 0.86× the ordinary stores on the 16-core host, against 1.23-1.52×
    /// for rows of 1 and 2.
    fn lead(&self) -> usize {
        let line = stream::LINE;
        let misaligned = self.bytes.as_ptr() as usize % line;
        (line - misaligned) % line / self.dtype.size_in_bytes()
    }

    /// [`Column::write`] with ordinary stores, straight into the run.
    fn write_in_place<W: Compute, R: ReduceOps<W>>(
        &mut self,
        op: &R,
        accs: &[R::Acc],
        second: bool,
    ) {
        let sixteen_bit = matches!(self.dtype, DType::F16 | DType::BF16);
        if sixteen_bit && TypeId::of::<R::Out>() == TypeId::of::<f32>() {
            // f32 values into f16 and bf16 go through a stage, to be
            // rounded a vector at a time ([`f32_to_f16`], [`f32_to_bf16`]).
            // (An f32 `Out` is one value per output, so its second cast is
            // its first.)
            let mut stage = [0f32; STAGE];
            for (k, accs) in accs.chunks(STAGE).enumerate() {
                let stage = &mut stage[..accs.len()];
                for (s, &a) in stage.iter_mut().zip(accs) {
                    *s = op.project(a).cast::<f32>();
                }
                let at = k * STAGE..k * STAGE + accs.len();
                if self.dtype == DType::F16 {
                    f32_to_f16(stage, &mut self.typed::<crate::f16>()[at]);
                } else {
                    let out = &mut self.typed::<crate::bf16>()[at];
                    dispatch!(f32_to_bf16(stage, out));
                }
            }
            return;
        }
        with_dtype!(self.dtype, O => {
            let out = self.typed::<O>();
            debug_assert_eq!(out.len(), accs.len());
            for (o, &a) in out.iter_mut().zip(accs) {
                let r = op.project(a);
                o.write(if second { r.cast_second::<O>() } else { r.cast::<O>() });
            }
        })
    }
}

/// How many outputs a tree wrote: made only by [`Outputs::write`], which
/// consumes the run it writes, so a total equal to the number of outputs
/// means each was written (the runs are disjoint by construction).
#[must_use]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Written(usize);

impl Written {
    pub(super) fn count(self) -> usize {
        self.0
    }
}

impl Add for Written {
    type Output = Written;
    fn add(self, other: Written) -> Written {
        Written(self.0 + other.0)
    }
}

/// A run of consecutive outputs of a reduction: the same elements of its
/// result and, for the ops with one, of its second result.
pub(super) struct Outputs<'a> {
    first: Column<'a>,
    second: Option<Column<'a>>,
    len: usize,
    /// Whether the results are written with streaming stores ([`stream`]),
    /// decided once for the whole call by their size.
    streamed: bool,
}

impl<'a> Outputs<'a> {
    /// Every output of `first` (and `second`, which holds as many).
    pub(super) fn new(first: &'a mut UninitStorage, second: Option<&'a mut UninitStorage>) -> Self {
        let len = first.len();
        let column = |s: &'a mut UninitStorage| Column {
            dtype: s.dtype(),
            bytes: s.as_mut_bytes(),
        };
        let second = second.map(|s| {
            assert_eq!(s.len(), len, "internal: both results hold every output");
            column(s)
        });
        let first = column(first);
        let streamed = stream::streams(len, first.dtype, second.as_ref().map(|s| s.dtype));
        Outputs {
            first,
            second,
            len,
            streamed,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The first `mid` outputs and the rest.
    pub(super) fn split_at(self, mid: usize) -> (Outputs<'a>, Outputs<'a>) {
        let (f0, f1) = self.first.split_at(mid);
        let (s0, s1) = match self.second.map(|s| s.split_at(mid)) {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        (
            Outputs {
                first: f0,
                second: s0,
                len: mid,
                streamed: self.streamed,
            },
            Outputs {
                first: f1,
                second: s1,
                len: self.len - mid,
                streamed: self.streamed,
            },
        )
    }

    /// Projects one accumulator per output into both results.
    pub(super) fn write<W: Compute, R: ReduceOps<W>>(mut self, op: &R, accs: &[R::Acc]) -> Written {
        assert_eq!(accs.len(), self.len, "internal: one accumulator per output");
        self.first.write(op, accs, false, self.streamed);
        if let Some(s) = &mut self.second {
            s.write(op, accs, true, self.streamed);
        }
        Written(self.len)
    }

    /// Fills these outputs a [`STAGE`] at a time: `fill(k, accs)` sets
    /// `accs` to the accumulators of outputs `k..k + accs.len()` (counted
    /// from the start of this run), which are then written.
    pub(super) fn fill_staged<W: Compute, R: ReduceOps<W>>(
        self,
        op: &R,
        mut fill: impl FnMut(usize, &mut [R::Acc]),
    ) -> Written {
        let mut stage = [op.identity(); STAGE];
        let lead = if self.streamed { self.first.lead() } else { 0 };
        let mut rest = self;
        let mut written = Written::default();
        for m in staged_lengths(lead, rest.len()) {
            let (head, tail) = rest.split_at(m);
            fill(written.0, &mut stage[..m]);
            written = written + head.write(op, &stage[..m]);
            rest = tail;
        }
        written
    }
}

/// The lengths of the stages `len` outputs are written in: `lead` first
/// (if any), then [`STAGE`] at a time. Every stage but the last therefore
/// ends on a cache line where the first ends on one: `STAGE` elements of
/// any dtype are whole lines.
fn staged_lengths(lead: usize, len: usize) -> impl Iterator<Item = usize> {
    let lead = lead.min(len);
    let rest = len - lead;
    (lead > 0)
        .then_some(lead)
        .into_iter()
        .chain((0..rest.div_ceil(STAGE)).map(move |k| STAGE.min(rest - k * STAGE)))
}

const _: () = assert!(
    STAGE % stream::LINE == 0,
    "a stage of any dtype is whole cache lines"
);

/// Calls `f(k, block)` for consecutive blocks of `block` outputs (the last
/// may be shorter), `k` being the block's first output counted from the
/// start of `out`. Halves are split at block boundaries and run in parallel
/// when they hold enough work (`inputs_per_output` each) to pay for it, so
/// which thread computes a block never changes what it computes, and a
/// small reduction never leaves the calling thread (handing work to the
/// pool and waiting for it costs about 10 µs). Returns what the blocks
/// wrote.
pub(super) fn par_blocks<'a>(
    out: Outputs<'a>,
    block: usize,
    inputs_per_output: usize,
    f: &(impl Fn(usize, Outputs<'_>) -> Written + Sync),
) -> Written {
    fn go<'a>(
        out: Outputs<'a>,
        start: usize,
        block: usize,
        inputs_per_output: usize,
        f: &(impl Fn(usize, Outputs<'_>) -> Written + Sync),
    ) -> Written {
        let blocks = out.len().div_ceil(block);
        if blocks <= 1 {
            if out.len() == 0 {
                return Written::default();
            }
            let streamed = out.streamed;
            let written = f(start, out);
            if streamed {
                // The block's streaming stores, visible before another
                // thread (the caller's, after the join) reads them.
                stream::fence();
            }
            return written;
        }
        let mid = blocks / 2 * block;
        let per_output = inputs_per_output.max(1);
        let work_b = (out.len() - mid).saturating_mul(per_output);
        let (a, b) = out.split_at(mid);
        let (wa, wb) = maybe_join(
            mid.saturating_mul(per_output),
            work_b,
            || go(a, start, block, inputs_per_output, f),
            || go(b, start + mid, block, inputs_per_output, f),
        );
        wa + wb
    }
    go(out, 0, block.max(1), inputs_per_output, f)
}

#[cfg(test)]
mod tests {
    use super::super::ops::SumOps;
    use super::*;

    #[test]
    fn blocks_write_every_output_once() {
        // Parallel and serial splits, ragged last blocks, and an f16 result
        // whose last word has bytes past its elements.
        for (n, block, inputs) in [(0, 1, 1), (1, 1, 1), (1001, 7, 1), (70001, 300, 1 << 10)] {
            let mut result = UninitStorage::new(DType::F16, n).unwrap();
            let written = par_blocks(Outputs::new(&mut result, None), block, inputs, &|k, out| {
                let accs: Vec<f32> = (k..k + out.len()).map(|i| (i % 2048) as f32).collect();
                out.write(&SumOps, &accs)
            });
            assert_eq!(written.count(), n);
            // SAFETY: `written` counts every output.
            let result = unsafe { result.assume_init() };
            let got: Vec<f32> = result
                .as_slice::<crate::f16>()
                .iter()
                .map(|h| h.to_f32())
                .collect();
            let want: Vec<f32> = (0..n).map(|i| (i % 2048) as f32).collect();
            assert_eq!(got, want, "{n} outputs in blocks of {block}");
        }
    }

    #[test]
    fn streamed_outputs_hold_every_value() {
        // Blocks starting off a cache line (333 outputs), written whole
        // (`write`) and a stage at a time (`fill_staged`), in dtypes of 2,
        // 4 and 8 bytes; the values are exact in all three.
        let value = |i: usize| (i % 2048) as f32;
        for dtype in [DType::F16, DType::F32, DType::F64] {
            for staged in [false, true] {
                let n = 5000;
                let mut result = UninitStorage::new(dtype, n).unwrap();
                let mut out = Outputs::new(&mut result, None);
                out.streamed = true;
                let written = par_blocks(out, 333, 1 << 10, &|k, out| {
                    if staged {
                        out.fill_staged(&SumOps, |j, accs: &mut [f32]| {
                            for (i, a) in accs.iter_mut().enumerate() {
                                *a = value(k + j + i);
                            }
                        })
                    } else {
                        let accs: Vec<f32> = (k..k + out.len()).map(value).collect();
                        out.write(&SumOps, &accs)
                    }
                });
                assert_eq!(written.count(), n);
                // SAFETY: `written` counts every output.
                let result = unsafe { result.assume_init() };
                let got: Vec<f32> = match dtype {
                    DType::F16 => result
                        .as_slice::<crate::f16>()
                        .iter()
                        .map(|h| h.to_f32())
                        .collect(),
                    DType::F32 => result.as_slice::<f32>().to_vec(),
                    _ => result.as_slice::<f64>().iter().map(|&x| x as f32).collect(),
                };
                let want: Vec<f32> = (0..n).map(value).collect();
                assert_eq!(got, want, "{dtype:?}, staged: {staged}");
            }
        }
    }

    #[test]
    fn stages_after_the_lead_are_whole() {
        let lengths = |lead, len| staged_lengths(lead, len).collect::<Vec<_>>();
        assert_eq!(lengths(0, 0), Vec::<usize>::new());
        assert_eq!(lengths(5, 3), vec![3]);
        assert_eq!(lengths(0, 600), vec![STAGE, STAGE, 600 - 2 * STAGE]);
        assert_eq!(lengths(7, 7 + STAGE), vec![7, STAGE]);
        assert_eq!(lengths(7, 8 + STAGE), vec![7, STAGE, 1]);
    }
}
