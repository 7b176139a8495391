//! Fan-out of short calls to a rayon pool whose workers stay awake between calls.
//!
//! rayon parks an idle worker after a few dozen yields; waking it costs 25-200 us on the small VMs we measure
//! on, longer than a whole gymnasium-style step of 1,024 cartpoles (~25 us). So after a call each pool thread
//! runs a *spinner* job for a short window (`ENVC_SPIN_US`, default 1,000 us) that polls for the next call and
//! takes its part of it; a call that finds a spinner gone wakes rayon's thread the ordinary way. When calls
//! come further apart than the window (a slow policy between steps), spinning would only burn a core, so the
//! window closes until calls come close together again.
//!
//! A call has at most one part per thread. The caller opens each part by writing the call's epoch into the part's
//! word; claiming swaps that epoch for `TAKEN`, so only a part of the call in flight can be claimed. Participant `w`
//! (the caller is 0) claims part `w` first, so a part's envs stay in one core's cache from call to call, then any
//! part still open (its worker asleep). The caller returns once every part is done; nothing a part borrows
//! outlives the call.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

/// How long a spinner polls for the next call when `ENVC_SPIN_US` is not set.
const SPIN: Duration = Duration::from_micros(1_000);

/// A part's word once claimed.
const TAKEN: u64 = u64::MAX;

/// The part runner of the call in flight: `job(p)` runs part `p`.
type Job = dyn Fn(usize) + Sync;

struct Shared {
    /// The epoch of the latest call (calls are numbered from 1).
    epoch: AtomicU64,
    /// Each part's word: the epoch of the call it is open in, or `TAKEN`.
    claims: Vec<AtomicU64>,
    /// Parts of the latest call finished.
    done: AtomicUsize,
    /// The latest call's job; written before its epoch is published, valid until its parts are done.
    job: Mutex<Option<&'static Job>>,
    /// Is worker `w`'s spinner polling (or queued to)?
    awake: Vec<AtomicBool>,
    panicked: AtomicBool,
    quit: AtomicBool,
    /// How long a spinner polls after its last part, in nanoseconds (0 or the gang's window).
    spin_ns: AtomicU64,
}

impl Shared {
    /// Run the parts of call `epoch` that participant `first` can claim: its own part, then any other.
    fn work(&self, epoch: u64, first: usize) {
        // Read before any claim: while one of its parts is open a call cannot finish, so if a claim below
        // succeeds, `job` is that call's.
        let job = *self.job.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.claims.len();
        for p in (first..n).chain(0..first) {
            let open =
                self.claims[p].compare_exchange(epoch, TAKEN, Ordering::AcqRel, Ordering::Relaxed);
            if open.is_err() {
                continue;
            }
            if let Some(job) = job {
                if catch_unwind(AssertUnwindSafe(|| job(p))).is_err() {
                    self.panicked.store(true, Ordering::Release);
                }
            }
            self.done.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Worker `w`'s spinner: its part of every call after `seen` published within `spin` of the last one, then
    /// the thread goes back to rayon.
    fn spin(&self, w: usize, mut seen: u64) {
        let mut last = Instant::now();
        let mut polls = 0u32;
        while !self.quit.load(Ordering::Acquire) {
            let e = self.epoch.load(Ordering::SeqCst);
            if e != seen {
                self.work(e, w);
                seen = e;
                last = Instant::now();
                continue;
            }
            polls = polls.wrapping_add(1);
            if polls % 256 == 0
                && last.elapsed().as_nanos() as u64 >= self.spin_ns.load(Ordering::Relaxed)
            {
                break;
            }
            std::hint::spin_loop();
        }
        // A call published after the last poll but before `awake` fell spawns no new spinner: take its part.
        // (SeqCst: this store and load against the caller's epoch store and `awake` swap.)
        self.awake[w].store(false, Ordering::SeqCst);
        let e = self.epoch.load(Ordering::SeqCst);
        if e != seen {
            self.work(e, w);
        }
    }
}

/// The calling thread plus `threads - 1` rayon workers, kept awake between calls.
pub struct Gang {
    pool: Option<ThreadPool>,
    threads: usize,
    shared: Arc<Shared>,
    /// The spin window.
    window: Duration,
    born: Instant,
    /// When the last call ended, in nanoseconds since `born` (0: none yet).
    last_end_ns: AtomicU64,
}

impl Gang {
    /// A gang of `threads` threads (the caller included) whose workers poll for `ENVC_SPIN_US` after each call.
    pub fn new(threads: usize) -> Result<Self, String> {
        let spin = std::env::var("ENVC_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(SPIN, Duration::from_micros);
        Self::with_spin(threads, spin)
    }

    /// A gang whose workers poll for `spin` after each call.
    pub fn with_spin(threads: usize, spin: Duration) -> Result<Self, String> {
        if threads == 0 {
            return Err("threads must be at least 1".into());
        }
        let pool = if threads > 1 {
            Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads - 1)
                    .thread_name(|i| format!("envc-{i}"))
                    .build()
                    .map_err(|e| e.to_string())?,
            )
        } else {
            None
        };
        Ok(Gang {
            pool,
            threads,
            window: spin,
            born: Instant::now(),
            last_end_ns: AtomicU64::new(0),
            shared: Arc::new(Shared {
                epoch: AtomicU64::new(0),
                claims: (0..threads).map(|_| AtomicU64::new(TAKEN)).collect(),
                done: AtomicUsize::new(0),
                job: Mutex::new(None),
                awake: (0..threads).map(|_| AtomicBool::new(false)).collect(),
                panicked: AtomicBool::new(false),
                quit: AtomicBool::new(false),
                spin_ns: AtomicU64::new(spin.as_nanos() as u64),
            }),
        })
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Run `job(0)`, ..., `job(parts - 1)` (`parts` <= threads) on the gang and the calling thread; returns when
    /// all are done.
    pub fn run<'a>(&self, parts: usize, job: &'a (dyn Fn(usize) + Sync + 'a)) {
        let parts = parts.min(self.threads);
        let Some(pool) = self.pool.as_ref().filter(|_| parts > 1) else {
            (0..parts).for_each(job);
            return;
        };
        let sh = &*self.shared;
        let window = self.window.as_nanos() as u64;
        let last_end = self.last_end_ns.load(Ordering::Relaxed);
        let gap = (self.born.elapsed().as_nanos() as u64).saturating_sub(last_end);
        sh.spin_ns.store(
            if last_end > 0 && gap > window {
                0
            } else {
                window
            },
            Ordering::Relaxed,
        );
        // SAFETY: the job is reachable only through `sh.job`, which this call empties before it returns, and it
        // is only run by a participant that claimed a part of this call, which this call waits for.
        let job: &'static Job =
            unsafe { std::mem::transmute::<&'a (dyn Fn(usize) + Sync + 'a), &'static Job>(job) };
        *sh.job.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
        sh.done.store(0, Ordering::Release);
        let epoch = sh.epoch.load(Ordering::Relaxed) + 1;
        for claim in &sh.claims[..parts] {
            claim.store(epoch, Ordering::Release);
        }
        sh.epoch.store(epoch, Ordering::SeqCst);
        for w in 1..self.threads {
            if !sh.awake[w].swap(true, Ordering::SeqCst) {
                let shared = Arc::clone(&self.shared);
                pool.spawn(move || shared.spin(w, epoch - 1));
            }
        }
        sh.work(epoch, 0);
        while sh.done.load(Ordering::Acquire) < parts {
            std::hint::spin_loop();
        }
        *sh.job.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.last_end_ns.store(
            (self.born.elapsed().as_nanos() as u64).max(1),
            Ordering::Relaxed,
        );
        if sh.panicked.swap(false, Ordering::AcqRel) {
            panic!("a part of a batch call panicked");
        }
    }
}

impl Drop for Gang {
    fn drop(&mut self) {
        self.shared.quit.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part of every call runs exactly once, whether the workers are awake, asleep or in between.
    fn each_part_once(threads: usize, spin: Duration) {
        let gang = Gang::with_spin(threads, spin).unwrap();
        for call in 0..2_000usize {
            let parts = 1 + call % threads;
            let runs: Vec<AtomicUsize> = (0..parts).map(|_| AtomicUsize::new(0)).collect();
            gang.run(parts, &|p| {
                runs[p].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                runs.iter().all(|r| r.load(Ordering::Relaxed) == 1),
                "call {call}"
            );
            if call % 500 == 0 {
                std::thread::sleep(Duration::from_millis(2)); // past the spin window: the next call wakes rayon
            }
        }
    }

    #[test]
    fn parts_run_once() {
        for threads in [1, 2, 3] {
            each_part_once(threads, Duration::from_micros(1_000));
            each_part_once(threads, Duration::ZERO);
        }
    }

    #[test]
    fn a_panicking_part_panics_the_call_and_the_gang_goes_on() {
        let gang = Gang::with_spin(2, Duration::from_micros(1_000)).unwrap();
        for _ in 0..20 {
            let r = catch_unwind(AssertUnwindSafe(|| gang.run(2, &|p| assert!(p == 0))));
            assert!(r.is_err());
            let sum = AtomicUsize::new(0);
            gang.run(2, &|p| {
                sum.fetch_add(p + 1, Ordering::Relaxed);
            });
            assert_eq!(sum.load(Ordering::Relaxed), 3);
        }
    }

    #[test]
    fn the_window_closes_while_calls_come_further_apart() {
        let window = Duration::from_millis(100);
        let gang = Gang::with_spin(2, window).unwrap();
        let spin_ns = || gang.shared.spin_ns.load(Ordering::Relaxed);
        gang.run(2, &|_| ());
        gang.run(2, &|_| ());
        assert_eq!(spin_ns(), window.as_nanos() as u64);
        std::thread::sleep(window * 3);
        gang.run(2, &|_| ());
        assert_eq!(spin_ns(), 0);
        gang.run(2, &|_| ());
        assert_eq!(spin_ns(), window.as_nanos() as u64);
    }
}
