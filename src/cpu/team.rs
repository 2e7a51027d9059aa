//! The team of threads a reduction's trees split across: each split hands
//! its second half to a fixed thread, and the threads wait for work by
//! spinning for a while.
//!
//! rayon's `join` hands the second half to whichever worker steals it, and
//! its workers sleep soon after they run dry. Both cost the small inputs a
//! reduction is called on again and again. On the 16-core host of the GPU
//! machine, torch's CPU sum of 25.7 MB read from cache took 43-48 µs at
//! best with 16 threads, 17-20 times faster than with one, while the same
//! trees on rayon took 78 µs (channel statistics: 124 µs, against torch's
//! 62); on this team they took 43-51 µs (channel statistics: 67-73). Each
//! of torch's OpenMP threads reads the same part of the input on every
//! call, so the part stays in that core's L2 (2 MiB there), and spins
//! between calls; under rayon a part lands on a different core each call
//! and is read from L3, after a wake-up.
//!
//! Here a reduction entering from outside any pool ([`enter`]) becomes
//! member 0 of the team and owns members `0..size`. A split ([`join`])
//! gives its second half the upper part of the members it owns, in
//! proportion to the work, and posts that half to the first of them; the
//! halves split again the same way. So a given split of a given shape runs
//! on the same thread call after call, and no two splits ever post to one
//! member. A member whose part is down to itself runs the rest of its
//! tree alone.
//!
//! A fixed split waits for its slowest thread, and a thread that has lost
//! its core waits for a scheduler tick. So a member that has not claimed
//! its half by the time the poster's own half is done loses it: the poster
//! takes it back and runs it, as rayon's `join` does with a half no one
//! stole. Without that, in a run on a host where both sides ran about
//! twice as slow as on others (other work on its cores, it seems), 4 MB
//! sums took 550-680 µs a call (torch's 26-28); with it, 16-22 µs on
//! another host, where rayon took 29-32.
//!
//! Where the team is busy (another thread's reduction holds it) or the
//! call comes from inside a rayon pool, the trees split through rayon as
//! before ([`super::pool`]). Either way the split points, and so the
//! results, are the same: only which thread computes a subtree differs.

use super::pool::{on_pool, Job, JobRef};
use std::cell::{Cell, UnsafeCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long an idle member waits for its next half before it parks. Long
/// enough to span the gap between back-to-back reductions, so that those
/// start without a wake-up (a futex wake and a trip through the
/// scheduler, several microseconds a member), short enough that the cores
/// are free soon after the last.
const SPIN_FOR: Duration = Duration::from_micros(200);

/// Busy spins (a `pause` each) an idle member makes before it starts to
/// yield its core in between: a few microseconds, the gap between
/// back-to-back calls.
const SPIN_LOOPS: u32 = 1 << 12;

/// Inputs of at most this many bytes are split across the team, larger ones
/// through rayon. Below it the input can stay in the cores' L2 caches
/// from one call to the next, which only a fixed split keeps, and a
/// wake-up is a large part of a call. On the 16-core host (2 MiB of L2 a
/// core, 32 MiB in all), in two runs that alternated the team and rayon,
/// each beside torch's CPU: 4 MB sums went from 0.82-0.91x torch to
/// 1.43-1.68x, 25.7 MB channel statistics from 0.46-0.97x to 0.80-1.30x;
/// a 32 MiB column sum, the edge, went from 0.80-1.01x to 0.67-0.92x. On
/// 205-268 MB reductions the team's fixed halves were 15-70% slower than
/// rayon's stealing, which evens out threads that memory serves unevenly
/// (rows of 8192, columns of 65536 rows, channel statistics).
pub(super) const TEAM_MAX_BYTES: usize = 32 << 20;

/// Whether a reduction reading `input_bytes` runs on the team: inputs over
/// [`TEAM_MAX_BYTES`] go to rayon. With one thread the team is the calling
/// thread alone ([`enter`]).
pub(super) fn takes(input_bytes: usize) -> bool {
    input_bytes <= TEAM_MAX_BYTES
}

/// The members `lo..hi` a thread owns; it is member `lo`. Empty outside
/// the team.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    lo: usize,
    hi: usize,
}

impl Span {
    const NONE: Span = Span { lo: 0, hi: 0 };

    fn len(self) -> usize {
        self.hi - self.lo
    }

    /// Where the span splits for halves of work `wa` and `wb`: the first
    /// member of the second half's part, each part at least one member.
    fn split(self, wa: usize, wb: usize) -> usize {
        let n = self.len() as u128;
        let total = (wa as u128 + wb as u128).max(1);
        let first = (n * wa as u128 + total / 2) / total;
        self.lo + (first.clamp(1, n - 1) as usize)
    }
}

thread_local! {
    /// The members this thread owns now.
    static SPAN: Cell<Span> = const { Cell::new(Span::NONE) };
}

/// A slot's states: nothing posted; a half posted and not yet claimed;
/// claimed, by the member or back by the thread that posted it.
const EMPTY: u8 = 0;
const POSTED: u8 = 1;
const CLAIMED: u8 = 2;

/// A member's mailbox: the half posted to it and the part it owns for it.
struct Slot {
    state: AtomicU8,
    half: UnsafeCell<Option<(JobRef, Span)>>,
    thread: OnceLock<Thread>,
}

// SAFETY: `half` is written only by the thread that owns the member (one at
// a time, by the span discipline) while the state is EMPTY, and taken only
// by whichever thread moves the state from POSTED to CLAIMED (release on
// posting, acquire on claiming).
unsafe impl Sync for Slot {}

impl Slot {
    /// Takes the half posted here, if one is and no one has claimed it:
    /// the member that serves this slot, or the thread that posted it,
    /// taking it back. Exactly one of them wins the claim.
    fn claim(&self) -> Option<(JobRef, Span)> {
        // Testing with a load first keeps the slot's cache line shared
        // while a member spins on it; only a claim writes it.
        if self.state.load(Ordering::Relaxed) != POSTED
            || self
                .state
                .compare_exchange(POSTED, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        // SAFETY: this thread moved the state from POSTED to CLAIMED, so
        // the owner wrote `half` (release on posting) and will not touch it
        // until the half has run (`join` waits for it), and no other
        // thread can claim it.
        let half = unsafe { (*self.half.get()).take() }.expect("internal: a posted half");
        self.state.store(EMPTY, Ordering::Relaxed);
        Some(half)
    }
}

struct Team {
    /// One slot a member; slot 0 (the entering thread) is never posted to.
    slots: &'static [Slot],
    /// Whether a reduction holds the team.
    busy: AtomicBool,
}

/// The team, started on first use with as many members as rayon's global
/// pool has threads (`RAYON_NUM_THREADS`, else one a core), so that the
/// plans that count threads count the same; `None` with one thread, or
/// where no thread could be started.
fn team() -> Option<&'static Team> {
    static TEAM: OnceLock<Option<Team>> = OnceLock::new();
    TEAM.get_or_init(|| {
        let size = rayon::current_num_threads();
        let slots: &'static [Slot] = Box::leak(
            (0..size)
                .map(|_| Slot {
                    state: AtomicU8::new(EMPTY),
                    half: UnsafeCell::new(None),
                    thread: OnceLock::new(),
                })
                .collect(),
        );
        // Members must be 0..size with no gaps: stop at the first thread
        // that fails to start, and keep the team that did.
        let mut started = 1;
        for (member, slot) in slots.iter().enumerate().skip(1) {
            let spawned = thread::Builder::new()
                .name(format!("tensor-reduce-{member}"))
                .spawn(move || serve(slot));
            match spawned {
                Ok(handle) => {
                    let _ = slot.thread.set(handle.thread().clone());
                    started += 1;
                }
                Err(_) => break,
            }
        }
        (started >= 2).then_some(Team {
            slots: &slots[..started],
            busy: AtomicBool::new(false),
        })
    })
    .as_ref()
}

/// Whether this thread is running a part of a reduction on the team.
#[inline(always)]
pub(super) fn on_team() -> bool {
    SPAN.get().len() > 0
}

/// A member's life: wait for a half, run it with the part posted with it,
/// and wait again.
fn serve(slot: &'static Slot) {
    loop {
        let start = Instant::now();
        let mut spins: u32 = 0;
        let (half, span) = loop {
            if let Some(posted) = slot.claim() {
                break posted;
            }
            spins = spins.wrapping_add(1);
            if spins < SPIN_LOOPS {
                std::hint::spin_loop();
            } else if start.elapsed() < SPIN_FOR {
                // Yielding lets a thread that wants this core (a member
                // that lost its own, another process) run; on an idle core
                // it returns at once.
                thread::yield_now();
            } else {
                // Woken by `join`'s unpark (or spuriously: the loop checks).
                thread::park();
            }
        };
        SPAN.set(span);
        // SAFETY: posted once by `join`, which waits for it to run.
        // `execute` catches the half's panic for `join` to resume.
        unsafe { half.execute() };
        SPAN.set(Span::NONE);
    }
}

/// Runs `f`, a reduction reading `input_bytes` whose trees split with
/// [`join`]: on the team where it [`takes`] them, the calling thread as
/// member 0, else (or where the team is busy or absent) on rayon's pool
/// ([`on_pool`]). Inside the team or a rayon pool, `f` just runs.
///
/// With one thread, the team is the calling thread alone, a part of one
/// member whose splits run one half after the other, as rayon's one worker
/// would run them after a hand-off. On the 2-core guest at one thread, the
/// hand-off cost about 5 µs a call (medians of 5 rounds): f32 `[64, 2056]`
/// over dim 1, whose tree splits, took 24.5 µs, `[63, 2056]`, which does
/// not, 19.1; `[129, 1020]` 21.6 against `[128, 1020]`'s 16.4.
pub(super) fn enter<R: Send>(input_bytes: usize, f: impl FnOnce() -> R + Send) -> R {
    if SPAN.get().len() > 0 || rayon::current_thread_index().is_some() {
        return f();
    }
    if !takes(input_bytes) {
        return on_pool(f);
    }
    if rayon::current_num_threads() == 1 {
        return as_part(Span { lo: 0, hi: 1 }, f);
    }
    let Some(team) = team() else {
        return on_pool(f);
    };
    if team
        .busy
        .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return on_pool(f);
    }
    let result = catch_unwind(AssertUnwindSafe(|| {
        as_part(
            Span {
                lo: 0,
                hi: team.slots.len(),
            },
            f,
        )
    }));
    team.busy.store(false, Ordering::Release);
    result.unwrap_or_else(|panic| resume_unwind(panic))
}

/// Runs `f` on this thread owning the members of `span`, and owning none
/// again after it, whether `f` returns or panics.
fn as_part<R>(span: Span, f: impl FnOnce() -> R) -> R {
    SPAN.set(span);
    let result = catch_unwind(AssertUnwindSafe(f));
    SPAN.set(Span::NONE);
    result.unwrap_or_else(|panic| resume_unwind(panic))
}

/// Runs `a` and `b`, of work `wa` and `wb`, and returns their results: in
/// the team, `b` on the first member of its share of this thread's part
/// and `a` here; with a part of one member, one after the other; outside
/// the team, through `rayon::join`.
pub(super) fn join<RA: Send, RB: Send>(
    wa: usize,
    wb: usize,
    a: impl FnOnce() -> RA + Send,
    b: impl FnOnce() -> RB + Send,
) -> (RA, RB) {
    let span = SPAN.get();
    if span.len() == 0 {
        return rayon::join(a, b);
    }
    if span.len() == 1 {
        return (a(), b());
    }
    let Some(team) = team() else {
        return (a(), b());
    };
    let mid = span.split(wa, wb);
    let slot = &team.slots[mid];
    let job = Job::new(b);
    // SAFETY: this thread owns member `mid` (it is in `span`, and not this
    // thread's own), so no one else posts to it, and its last half has run
    // (whoever posted it waited for it). `job` stays on this frame until
    // `wait` below returns.
    unsafe {
        *slot.half.get() = Some((
            job.as_ref(),
            Span {
                lo: mid,
                hi: span.hi,
            },
        ))
    };
    slot.state.store(POSTED, Ordering::Release);
    if let Some(thread) = slot.thread.get() {
        thread.unpark();
    }
    SPAN.set(Span {
        lo: span.lo,
        hi: mid,
    });
    // `b` may borrow what `a` does: wait for it even when `a` panics.
    let ra = catch_unwind(AssertUnwindSafe(a));
    // A member that has not claimed its half by now is asleep or has lost
    // its core (to another process, say): this thread takes the half back
    // and runs it in the member's place, rather than wait for it. On the
    // 2-core machine with the other core busy, the fixed halves alone had
    // made channel statistics of 6.4 MB take 296 µs a call (a scheduler
    // tick) instead of 93.
    if let Some((half, part)) = slot.claim() {
        SPAN.set(part);
        // SAFETY: `job` is still on this frame; `execute` catches `b`'s
        // panic into the job, which `wait` returns at once.
        unsafe { half.execute() };
    }
    SPAN.set(span);
    let rb = job.wait();
    match (ra, rb) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(panic), _) | (_, Err(panic)) => resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn spans_split_in_proportion_to_the_work() {
        let s = Span { lo: 0, hi: 16 };
        assert_eq!(s.split(1, 1), 8);
        assert_eq!(s.split(5, 6), 7);
        // Each side keeps a member, however lopsided the work.
        assert_eq!(s.split(1, 0), 15);
        assert_eq!(s.split(0, 1), 1);
        assert_eq!(Span { lo: 4, hi: 6 }.split(3, 1), 5);
    }

    /// Splits `0..n` in halves down to single items, recording which
    /// thread handled each item.
    fn spread(lo: usize, hi: usize, seen: &Mutex<Vec<(usize, thread::ThreadId)>>) -> usize {
        if hi - lo == 1 {
            // Long enough that no member runs two items while another idles,
            // and that a parked member wakes and claims its item before the
            // poster's own item is done (else the poster takes it back).
            thread::sleep(Duration::from_millis(100));
            seen.lock().unwrap().push((lo, thread::current().id()));
            return lo;
        }
        let mid = (lo + hi) / 2;
        let (a, b) = join(
            mid - lo,
            hi - mid,
            || spread(lo, mid, seen),
            || spread(mid, hi, seen),
        );
        a + b
    }

    #[test]
    fn each_member_runs_its_own_part() {
        let Some(team) = team() else {
            return; // One thread: nothing to split across.
        };
        let n = team.slots.len();
        let seen = Mutex::new(Vec::new());
        let total = enter(0, || {
            // Entered unless another test holds the team; then rayon runs
            // it, and only the result is checked.
            let owned = SPAN.get() == Span { lo: 0, hi: n };
            (spread(0, n, &seen), owned)
        });
        assert_eq!(total.0, n * (n - 1) / 2);
        if total.1 {
            let seen = seen.into_inner().unwrap();
            let threads: std::collections::HashSet<_> = seen.iter().map(|&(_, t)| t).collect();
            assert_eq!(threads.len(), n, "one item a member: {seen:?}");
        }
    }

    #[test]
    fn a_panic_in_either_half_reaches_the_caller_after_both_ran() {
        for panic_in_b in [false, true] {
            let ran = Mutex::new(0);
            let caught = catch_unwind(AssertUnwindSafe(|| {
                enter(0, || {
                    join(
                        1,
                        1,
                        || {
                            *ran.lock().unwrap() += 1;
                            assert!(panic_in_b, "in a");
                        },
                        || {
                            *ran.lock().unwrap() += 1;
                            assert!(!panic_in_b, "in b");
                        },
                    )
                })
            }));
            assert!(caught.is_err());
            assert_eq!(*ran.lock().unwrap(), 2);
            // The team is free again.
            assert_eq!(enter(0, || 5), 5);
        }
    }
}
