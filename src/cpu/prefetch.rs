//! Software prefetch for the loops that stream a row's input.
//!
//! The hardware prefetchers follow a stream only within a 4 KiB page and
//! restart at each new one, and a core whose loop spends time converting
//! (16-bit inputs) or storing results (short rows) has fewer demand loads
//! in flight to make up for it. On the 16-core host of an H100 machine, at
//! 16 threads over 268 MB (one call alternating the distances, two
//! rounds), asking for each line [`PREFETCH_AHEAD`] bytes before the loop
//! reads it took f16 rows of 4096 from 2.7-3.2 ms to 1.8-1.9, bf16 rows of
//! 4096 from 2.6-2.7 to 1.7-2.1 (4 and 8 KiB ahead, one outlier of 3.9
//! aside), f16 rows of 16 from 5.6-7.0 to 4.1-5.0, f32 rows of 16 from
//! 3.2-3.4 to 1.9-2.1, f16 rows of 128 from 3.1-3.4 to 2.0 and f32 rows of
//! 32 from 3.4-3.9 to 2.3-3.1; f32 rows of 4096, which already ran at the
//! plain read, stayed level. 4 KiB and 16 KiB ahead measured close to 8
//! KiB.
//!
//! Column leaves whose rows lie end to end prefetch along them the same
//! way. Where a tile's pieces of the rows have gaps between them (a row
//! stride apart), a prefetch along the row (1 and 4 KiB ahead) measured no
//! better, and where the pieces are short they ask for the rows ahead
//! instead ([`Prefetch::to_l2`]); see `tree::column_prefetch`. The loops
//! of the team of threads do not prefetch ([`Prefetch::here`]).
//!
//! On the 2-core machine (an AMD EPYC guest, two threads, 268 MB, one
//! binary switching the prefetch off and on, three rounds), the row loops
//! measured level to 1.3x faster with it (f16 and bf16 rows of 4096 4.5
//! to 3.4-3.6 ms, f32 rows of 16 4.8-4.9 to 4.1-4.3), the columns in
//! pieces of 4 KiB level. A later 2-core guest, whose memory read 12-18
//! GB/s (five rounds beside torch, `TENSOR_REDUCE_CPU_PREFETCH=off` as the
//! other side), measured the trade both ways: without it, f64 and i64 rows
//! of 128 to 65536 ran 1.01-1.17x faster and 256-channel statistics
//! 1.10x, while 16-bit rows of 16 to 65536 ran 0.71-0.93x, f32 rows of 16
//! and 32 0.84-0.93x, 8-byte rows of 2 and 16 0.84-0.92x, and NHWC channel
//! statistics and middle dims 0.89-0.93x. Both trades follow what the
//! loop does per byte: where it converts or ends a row every few lines,
//! the software's requests keep the memory busy; where it streams long
//! runs of 4- or 8-byte elements through adds alone, the hardware's
//! prefetch keeps up, and the software's only add traffic and
//! instructions. So those runs ([`Prefetch::for_run`]) go without: on the
//! same guest (five rounds, torch beside), f32 rows of 4096 to 65536 ran
//! 1.03-1.32x faster without it and rows of 100 1.06x, f32 rows of 128
//! level, 16-bit rows of 128 to 65536 0.66-0.83x, which keep it. Against
//! the build that prefetched every run (the same protocol), the rule made
//! f32 rows of 128 to 65536 1.02-1.19x faster, f64 and i64 rows of 128 to
//! 65536 1.03-1.16x and NCHW channel statistics 1.03-1.11x; the loops it
//! leaves alone moved 0.81-1.17x, this guest's noise.

/// Bytes ahead of a streaming loop that it asks the memory for.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) const PREFETCH_AHEAD: usize = 8192;

/// The longest contiguous run of 4- or 8-byte elements that a loop still
/// prefetches ahead of ([`Prefetch::for_run`]): four cache lines, f32 rows
/// of 64 and f64 rows of 32. Rows this short end often enough that the
/// prefetch paid (f32 rows of 16 and 32, 8-byte rows of 2 and 16); rows
/// of 100 f32 (400 bytes) and longer measured level or faster without.
const PREFETCHED_RUN_BYTES: usize = 256;

/// Bytes a prefetch brings in: a cache line on current x86-64 cores.
#[cfg(target_arch = "x86_64")]
const LINE: usize = 64;

/// Whether the calling thread's loops prefetch, read once before a loop
/// ([`Prefetch::here`]): a thread-local read at every prefetch made the
/// row loops 3-10% slower.
#[derive(Clone, Copy, Debug)]
pub(super) struct Prefetch {
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    on: bool,
}

impl Prefetch {
    /// Off on the team of threads ([`super::team`]): its inputs, of at
    /// most 32 MiB, are read from the caches call after call, where the
    /// hardware's prefetch keeps up and the software's, reaching past the
    /// end of each piece a loop reads, only adds traffic. On the 16-core
    /// host (two calls alternating the builds, four rounds each), channel
    /// statistics of 25.7 MB went from 161-272 µs a call to 148-163
    /// without it, a first round of 234 aside (blocks of 2 planes, 25 KB a
    /// run, each overshot by 8 KiB); the team's row and column sums
    /// measured level. A team of one (one thread, `team::enter`) does not
    /// prefetch either: on the 2-core guest at one thread, the 25.7 MB
    /// rows and channel statistics ran 1.03x and 1.27x as fast on it as
    /// on rayon's one worker, which prefetched.
    #[inline(always)]
    pub(super) fn here() -> Self {
        Prefetch {
            on: !super::team::on_team() && !switched_off(),
        }
    }

    /// [`Prefetch::here`] for a loop that reads `len` elements of `T` as
    /// one contiguous run (a row, a leaf of one, a plane): on only where
    /// the elements are narrower than 4 bytes, widened as they are read,
    /// or the run is at most [`PREFETCHED_RUN_BYTES`] long (see the
    /// module's doc).
    #[inline(always)]
    pub(super) fn for_run<T>(len: usize) -> Self {
        let here = Self::here();
        Prefetch {
            on: here.on && run_takes_prefetch(size_of::<T>(), len),
        }
    }

    /// Asks for the cache lines [`PREFETCH_AHEAD`] bytes past each line of
    /// `x`, into L1: the step of a loop that reads `x` and goes on past it.
    /// A hint only (it never faults, wherever the address falls, and never
    /// changes a result); a no-op on targets other than x86-64, where it
    /// is unmeasured.
    #[inline(always)]
    pub(super) fn ahead<T>(self, x: &[T]) {
        #[cfg(target_arch = "x86_64")]
        if self.on {
            prefetch_lines::<{ std::arch::x86_64::_MM_HINT_T0 }, T>(x, PREFETCH_AHEAD);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = x;
    }

    /// Asks for the cache lines of `x` itself, into L2: for the column
    /// leaves, whose next rows are a row stride away, where no hardware
    /// prefetcher looks (see `tree::PREFETCH_PIECE_BYTES`). L2 rather than
    /// L1, which holds the tile's accumulators (up to 32 KiB). A hint, as
    /// [`Prefetch::ahead`].
    #[inline(always)]
    pub(super) fn to_l2<T>(self, x: &[T]) {
        #[cfg(target_arch = "x86_64")]
        if self.on {
            prefetch_lines::<{ std::arch::x86_64::_MM_HINT_T1 }, T>(x, 0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = x;
    }
}

/// Whether a contiguous run of `len` elements of `elem_bytes` bytes is
/// read with software prefetch ([`Prefetch::for_run`]).
fn run_takes_prefetch(elem_bytes: usize, len: usize) -> bool {
    elem_bytes < 4 || len.saturating_mul(elem_bytes) <= PREFETCHED_RUN_BYTES
}

/// Whether `TENSOR_REDUCE_CPU_PREFETCH=off` in the environment switches
/// software prefetch off for the process: so that one build can be timed
/// both ways on a host (`scripts/ab_cpu.py` sets a side's environment),
/// the distances above having been measured on two machines only. Read
/// once; a prefetch never changes a result, so neither does this.
fn switched_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    switched_off_by_env(&OFF, "TENSOR_REDUCE_CPU_PREFETCH")
}

/// Whether the environment variable `var` switches a CPU speed-up off for
/// the process ([`switched_off_by`]), read once into `cell`: the prefetch
/// switch and, the same way, `stream`'s.
pub(super) fn switched_off_by_env(cell: &'static std::sync::OnceLock<bool>, var: &str) -> bool {
    *cell.get_or_init(|| switched_off_by(std::env::var(var).ok().as_deref()))
}

/// Whether the variable's value (`None`: unset) switches prefetch off
/// (and, the same way, `stream`'s streaming stores).
fn switched_off_by(value: Option<&str>) -> bool {
    value == Some("off")
}

/// One prefetch with `HINT` for each line of `x`, `ahead` bytes on.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_lines<const HINT: i32, T>(x: &[T], ahead: usize) {
    let p = x.as_ptr().cast::<i8>();
    let mut at = 0;
    while at < std::mem::size_of_val(x) {
        // SAFETY: a prefetch reads nothing the program sees and cannot
        // fault, and `wrapping_add` makes no claim that the address is
        // inside `x`'s allocation. SSE is part of the x86-64 baseline.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<HINT>(p.wrapping_add(at + ahead))
        };
        at += LINE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_off_switches_prefetch_off() {
        assert!(switched_off_by(Some("off")));
        for kept in [None, Some(""), Some("on"), Some("0"), Some("OFF ")] {
            assert!(!switched_off_by(kept), "{kept:?}");
        }
    }

    #[test]
    fn long_runs_of_wide_elements_go_without() {
        // 16-bit and byte elements, widened in the loop, at any length.
        assert!(run_takes_prefetch(2, 65536));
        assert!(run_takes_prefetch(1, usize::MAX));
        // f32 rows of 64 and f64 rows of 32 still prefetch, one more
        // element does not.
        assert!(run_takes_prefetch(4, 64) && !run_takes_prefetch(4, 65));
        assert!(run_takes_prefetch(8, 32) && !run_takes_prefetch(8, 33));
        assert!(!run_takes_prefetch(8, usize::MAX));
        // Off for the process is off for every run.
        assert_eq!(Prefetch::for_run::<f32>(16).on, Prefetch::here().on);
        assert!(!Prefetch::for_run::<f64>(1024).on);
    }

    #[test]
    fn the_team_does_not_prefetch() {
        assert_eq!(Prefetch::here().on, !switched_off(), "outside the team");
        let (on, owned) =
            super::super::team::enter(0, || (Prefetch::here().on, super::super::team::on_team()));
        // Entered unless another test holds the team (then rayon runs it).
        assert_eq!(on, !owned && !switched_off());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn prefetching_past_the_mapping_does_not_fault() {
        // A readable page followed by unmapped ones: the prefetches of its
        // last line land PREFETCH_AHEAD bytes into the hole.
        let page = 4096;
        let span = page + PREFETCH_AHEAD + page;
        // SAFETY: a fresh anonymous mapping, unmapped past its first page
        // before the slice is made, and dropped at the end.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(
                libc::munmap(p.cast::<u8>().add(page).cast(), span - page),
                0
            );
            let x = std::slice::from_raw_parts(p.cast::<u32>(), page / 4);
            let prefetch = Prefetch { on: true };
            prefetch.ahead(&x[x.len() - 16..]);
            prefetch.ahead(x);
            prefetch.to_l2(x);
            assert_eq!(x[x.len() - 1], 0, "the mapping reads as zeros");
            assert_eq!(libc::munmap(p, page), 0);
        }
    }
}
