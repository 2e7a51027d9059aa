//! How a reduction enters rayon's thread pool from a thread outside it
//! (inputs too large for the team of [`super::team`], or while another
//! call holds the team), and the hand-over of a closure to another thread
//! that both use ([`Job`]).
//!
//! rayon hands such a call to the pool and puts the calling thread to sleep
//! on a lock until the work is done; waking it again is a futex wake and a
//! trip through the scheduler. On the GPU machine's 16-core host an empty
//! `rayon::join` from the main thread took 12 µs, a third of a 4 MB
//! reduction there (torch's OpenMP threads spin between calls instead).
//! [`on_pool`] hands the work over the same way, but the caller yields in a
//! loop while it waits, parking only once the work has run for a while, so
//! a short reduction returns as soon as its last task does. There, calls
//! alternating with and without it: an empty hand-over 12.8 -> 1.5 µs, a
//! 4 MB sum of rows of 128 and a 4 MB full sum about 6 µs faster (39.9 ->
//! 33.7 and 30.5 -> 25.2 µs, best of 400), larger inputs level. A busy
//! spin of 20 µs, then parking, gained nothing: the spinning caller took a
//! core from a worker.

use std::cell::UnsafeCell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long a thread waiting for a [`Job`] yields before it parks.
/// Yielding (rather than a busy spin) leaves the core to a worker that
/// needs it; past this, the work is long enough that a wake-up's few
/// microseconds do not count, and a parked waiter costs the workers
/// nothing.
const YIELD_FOR: Duration = Duration::from_micros(100);

/// Runs `f` on rayon's pool and returns its result; panics in `f` resume
/// in the caller. Called from a worker of a pool, it just runs `f`.
pub(super) fn on_pool<F: FnOnce() -> R + Send, R: Send>(f: F) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let job = Job::new(f);
    let entry = job.as_ref();
    // SAFETY: `job` lives on this frame until `wait` returns, which is not
    // before `run_job` is through with it.
    rayon::spawn(move || unsafe { entry.execute() });
    match job.wait() {
        Ok(r) => r,
        Err(panic) => resume_unwind(panic),
    }
}

/// A closure and its result slot, shared by the thread that waits for it
/// and the thread that runs it.
pub(super) struct Job<F, R> {
    f: UnsafeCell<Option<F>>,
    result: UnsafeCell<Option<thread::Result<R>>>,
    done: AtomicBool,
    caller: Thread,
}

impl<F: FnOnce() -> R + Send, R: Send> Job<F, R> {
    pub(super) fn new(f: F) -> Job<F, R> {
        Job {
            f: UnsafeCell::new(Some(f)),
            result: UnsafeCell::new(None),
            done: AtomicBool::new(false),
            caller: thread::current(),
        }
    }

    /// A reference another thread can run the job through. The job must
    /// stay where it is (borrowed, not moved) until [`Job::wait`] returns.
    pub(super) fn as_ref(&self) -> JobRef {
        JobRef {
            job: self as *const Job<F, R> as *const (),
            run: run_job::<F, R>,
        }
    }

    /// Waits until the job has run, yielding the core for [`YIELD_FOR`]
    /// and then parking, and returns its result (or its panic). Called by
    /// the thread that made the job.
    pub(super) fn wait(&self) -> thread::Result<R> {
        let start = Instant::now();
        while !self.done.load(Ordering::Acquire) {
            if start.elapsed() < YIELD_FOR {
                thread::yield_now();
            } else {
                // Woken by `run_job`'s unpark (or spuriously: the loop checks).
                thread::park();
            }
        }
        // SAFETY: `done` is set once the running thread is through with the
        // job; nothing else touches `result` now.
        unsafe { (*self.result.get()).take() }.expect("internal: a finished job has a result")
    }
}

/// A type-erased pointer to a [`Job`] and the function that runs it: what
/// a closure given to another thread may hold.
pub(super) struct JobRef {
    job: *const (),
    run: unsafe fn(*const ()),
}

impl JobRef {
    /// Runs the job, stores its result (or its panic) and wakes its waiter.
    ///
    /// # Safety
    /// The job has not run yet and is still waited for ([`Job::as_ref`]).
    pub(super) unsafe fn execute(self) {
        // SAFETY: the caller's promise.
        unsafe { (self.run)(self.job) }
    }
}

// SAFETY: the job's closure and result are `Send` (`on_pool`'s bounds), and
// the caller does not touch them until `done` says the worker is through.
unsafe impl Send for JobRef {}

/// Runs the job `job` points to, stores its result and wakes the caller.
///
/// # Safety
/// `job` points to a live `Job<F, R>` whose closure has not run, and the
/// `Job` outlives this call up to its store to `done`.
unsafe fn run_job<F: FnOnce() -> R, R>(job: *const ()) {
    // SAFETY: the caller's promise; `f` and `result` are touched by this
    // thread alone until `done` is set.
    let job = unsafe { &*(job as *const Job<F, R>) };
    let f = unsafe { (*job.f.get()).take() }.expect("internal: a job runs once");
    let result = catch_unwind(AssertUnwindSafe(f));
    unsafe { *job.result.get() = Some(result) };
    let caller = job.caller.clone();
    // The caller may free `job` once it sees `done`: nothing below reads it.
    job.done.store(true, Ordering::Release);
    caller.unpark();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_the_pool_and_returns_the_result() {
        let data: Vec<u64> = (0..100_000).collect();
        let (sum, on_worker) = on_pool(|| {
            let (a, b) = rayon::join(
                || data[..50_000].iter().sum::<u64>(),
                || data[50_000..].iter().sum::<u64>(),
            );
            (a + b, rayon::current_thread_index().is_some())
        });
        assert_eq!(sum, 99_999 * 100_000 / 2);
        assert!(on_worker);
    }

    #[test]
    fn long_work_wakes_the_parked_caller() {
        let r = on_pool(|| {
            thread::sleep(YIELD_FOR * 20);
            7
        });
        assert_eq!(r, 7);
    }

    #[test]
    fn panics_resume_in_the_caller() {
        let caught = catch_unwind(|| on_pool(|| -> u8 { panic!("inside the pool") }));
        let message = caught.expect_err("the panic reaches the caller");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"inside the pool"));
        // The pool still works.
        assert_eq!(on_pool(|| 3), 3);
    }
}
