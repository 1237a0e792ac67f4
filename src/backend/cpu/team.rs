//! The threads that run the solver's kernels: the calling thread and `threads - 1` workers that
//! spin between calls for a while before they park, as OpenMP's threads do (LIS's kernels run
//! on them), where rayon's idle workers park within tens of microseconds.
//!
//! Why not rayon here: an iteration's parallel calls are separated by serial work (the solver's
//! scalars, small vector passes), long enough for rayon's workers to fall asleep; waking one
//! took 10-25 us on this project's 2-core machine, and a call whose caller then sleeps while
//! the last task finishes pays a second wake-up. On bcsstk13 in double-double (a 100 us SpMV)
//! that ate the whole gain of a second thread (`benches/results/cpu-threads.md`). A spinning
//! worker starts a call's tasks within a fraction of a microsecond.
//!
//! Any thread may run any task (see [`Job`]); the kernels' results never depend on which thread
//! ran what (`tasks.rs`).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an idle worker spins before it parks: longer than the serial gaps between an
/// iteration's parallel calls, short enough not to hold a core long after the solve.
const SPIN: Duration = Duration::from_micros(200);

/// One call: its tasks, on the caller's stack while the call lasts. The tasks are cut into one
/// block per taking-part thread, which that thread starts on (thread 0 is the caller), so that
/// the same rows land on the same core call after call while the threads keep pace, as OpenMP's
/// static schedule does; a thread that runs out takes what is left of the others' blocks.
struct Job<'a> {
    run: &'a (dyn Fn(usize) + Sync),
    tasks: usize,
    /// The next task of each block, a cache line each (their owners update them).
    next: Vec<Line<AtomicUsize>>,
    done: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

/// A value alone on its cache line (128 bytes: two lines, for the adjacent-line prefetcher).
#[repr(align(128))]
struct Line<T>(T);

impl Job<'_> {
    fn new(blocks: usize, tasks: usize, run: &(dyn Fn(usize) + Sync)) -> Job<'_> {
        Job {
            run,
            tasks,
            next: (0..blocks)
                .map(|b| Line(AtomicUsize::new(b * tasks / blocks)))
                .collect(),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        }
    }

    /// Run tasks, thread `me`'s block first, until none is left.
    fn work(&self, me: usize) {
        let blocks = self.next.len();
        for b in (0..blocks).map(|k| (me + k) % blocks) {
            let (next, end) = (&self.next[b].0, (b + 1) * self.tasks / blocks);
            // A read before the increment: a finished block costs no write to its line.
            while next.load(SeqCst) < end {
                let task = next.fetch_add(1, SeqCst);
                if task >= end {
                    break;
                }
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (self.run)(task))) {
                    self.panic.lock().unwrap().get_or_insert(payload);
                }
                self.done.fetch_add(1, SeqCst);
            }
        }
    }
}

/// A caller and its workers.
struct Team {
    threads: usize,
    /// The job being run (null between calls); its lifetime is erased: see [`Team::run`].
    job: AtomicPtr<Job<'static>>,
    /// Bumped for each job, so that an idle worker notices one without touching `active`.
    epoch: AtomicU64,
    /// Workers `1..=helpers` take part in the current job (one thread a task at most); the
    /// others leave it alone, so a 2-task call on 16 threads costs no more than on 2.
    helpers: AtomicUsize,
    /// Workers between taking `job` and being done with it.
    active: AtomicUsize,
    /// One call at a time; a call that finds the team busy runs its tasks itself.
    caller: Mutex<()>,
    sleepers: AtomicUsize,
    parked: Mutex<()>,
    wake: Condvar,
}

impl Team {
    fn new(threads: usize) -> Team {
        Team {
            threads,
            job: AtomicPtr::new(std::ptr::null_mut()),
            epoch: AtomicU64::new(0),
            helpers: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            caller: Mutex::new(()),
            sleepers: AtomicUsize::new(0),
            parked: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// A team and its workers, for the life of the process.
    fn start(threads: usize) -> &'static Team {
        let team: &'static Team = Box::leak(Box::new(Team::new(threads)));
        for worker in 1..threads {
            std::thread::Builder::new()
                .name(format!("precsolve-{threads}-{worker}"))
                .spawn(move || team.serve(worker))
                .expect("starting a kernel thread");
        }
        team
    }

    /// `run(0..tasks)`, spread over the caller and the workers.
    fn run(&self, tasks: usize, run: &(dyn Fn(usize) + Sync)) {
        let Ok(_turn) = self.caller.try_lock() else {
            // Another solve (or a task of this call) holds the team: run here, in order.
            return run_in_order(tasks, run);
        };
        let threads = self.threads.min(tasks);
        let job = Job::new(threads, tasks, run);
        // SAFETY: the pointer outlives its use: it is withdrawn below before this frame ends,
        // and a worker only dereferences it between raising `active` and lowering it again,
        // having loaded it after raising `active`; the wait for `active == 0` after the
        // withdrawal (all SeqCst) means every worker that saw it is done with it.
        let shared = &job as *const Job<'_> as *mut Job<'static>;
        self.job.store(shared, SeqCst);
        self.helpers.store(threads - 1, SeqCst);
        self.epoch.fetch_add(1, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            let _lock = self.parked.lock().unwrap();
            self.wake.notify_all();
        }
        job.work(0);
        while job.done.load(SeqCst) < tasks {
            std::hint::spin_loop();
        }
        self.job.store(std::ptr::null_mut(), SeqCst);
        while self.active.load(SeqCst) > 0 {
            std::hint::spin_loop();
        }
        if let Some(payload) = job.panic.into_inner().unwrap() {
            resume_unwind(payload);
        }
    }

    /// A worker's life: take part in each job, spin a while after it, then park.
    fn serve(&self, me: usize) {
        let mut seen = 0;
        let mut idle_since = Instant::now();
        loop {
            let epoch = self.epoch.load(SeqCst);
            if epoch != seen {
                seen = epoch;
                if me > self.helpers.load(SeqCst) {
                    // Not needed (a later job's count read here at worst: it then runs
                    // without this worker, or finds the job done).
                    continue;
                }
                self.active.fetch_add(1, SeqCst);
                let job = self.job.load(SeqCst);
                if !job.is_null() {
                    // SAFETY: see `run`.
                    unsafe { &*job }.work(me);
                }
                self.active.fetch_sub(1, SeqCst);
                idle_since = Instant::now();
            } else if idle_since.elapsed() < SPIN {
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            } else {
                let lock = self.parked.lock().unwrap();
                self.sleepers.fetch_add(1, SeqCst);
                // A job published before `sleepers` rose is seen here; one after it wakes us.
                let lock = match self.epoch.load(SeqCst) == seen {
                    true => self.wake.wait(lock).unwrap(),
                    false => lock,
                };
                self.sleepers.fetch_sub(1, SeqCst);
                drop(lock);
                idle_since = Instant::now();
            }
        }
    }
}

/// The team of `threads` threads (the caller among them), started at its first use and kept
/// for the life of the process (its workers park when idle).
fn team(threads: usize) -> &'static Team {
    static TEAMS: OnceLock<Mutex<Vec<(usize, &'static Team)>>> = OnceLock::new();
    let mut teams = TEAMS.get_or_init(Default::default).lock().unwrap();
    if let Some(&(_, team)) = teams.iter().find(|(n, _)| *n == threads) {
        return team;
    }
    let team = Team::start(threads);
    teams.push((threads, team));
    team
}

/// `run(task)` for every task in `0..tasks`, on `threads` threads (the calling thread one of
/// them); returns when every task has run. A panicking task's panic is the call's, once the
/// other tasks are done.
pub(super) fn run_tasks(threads: usize, tasks: usize, run: &(dyn Fn(usize) + Sync)) {
    if threads < 2 || tasks < 2 {
        return run_in_order(tasks, run);
    }
    team(threads).run(tasks, run);
}

/// The tasks on the calling thread, in order, with the team's contract: a panic is resumed
/// once every other task has run. (A plain loop stopped at the panic, so whether the rest ran
/// depended on whether another solve held the team.)
fn run_in_order(tasks: usize, run: &(dyn Fn(usize) + Sync)) {
    let mut first_panic = None;
    for task in 0..tasks {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| run(task))) {
            first_panic.get_or_insert(payload);
        }
    }
    if let Some(payload) = first_panic {
        resume_unwind(payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_once_on_any_team() {
        for threads in 1..=3 {
            for tasks in [0, 1, 2, 7, 64] {
                let counts: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                for _ in 0..50 {
                    run_tasks(threads, tasks, &|i| {
                        counts[i].fetch_add(1, SeqCst);
                    });
                }
                assert!(counts.iter().all(|c| c.load(SeqCst) == 50), "{threads} {tasks}");
            }
        }
    }

    #[test]
    fn parked_workers_wake_for_the_next_call() {
        // A team of its own: the other tests' calls would find the shared one busy.
        let team = Team::start(2);
        let workers = Mutex::new(std::collections::HashSet::new());
        team.run(2, &|_| ());
        std::thread::sleep(SPIN * 5);
        // Tasks that last until a second thread has run one: only a woken worker ends them.
        let started = AtomicUsize::new(0);
        team.run(2, &|_| {
            workers.lock().unwrap().insert(std::thread::current().id());
            started.fetch_add(1, SeqCst);
            let t = Instant::now();
            while started.load(SeqCst) < 2 && t.elapsed() < Duration::from_secs(10) {
                std::hint::spin_loop();
            }
        });
        assert_eq!(workers.lock().unwrap().len(), 2, "a worker took a task");
    }

    /// Eight tasks through `call`, task 3 panicking: whether the call panicked, and how many
    /// tasks ran.
    fn eight_tasks_one_failing(call: impl Fn(&(dyn Fn(usize) + Sync))) -> (bool, usize) {
        let ran = AtomicUsize::new(0);
        let failing = |i: usize| {
            ran.fetch_add(1, SeqCst);
            assert!(i != 3, "task 3 fails");
        };
        let panicked = catch_unwind(AssertUnwindSafe(|| call(&failing))).is_err();
        (panicked, ran.load(SeqCst))
    }

    /// A call made while the team is busy (here: from a task of the team's own call) runs its
    /// tasks on the calling thread, as a one-thread call does, and a panic still waits for the
    /// other tasks.
    #[test]
    fn a_task_panic_in_a_call_the_busy_team_runs_in_order_comes_after_the_other_tasks() {
        let team = Team::start(2);
        let nested = Mutex::new(None);
        team.run(2, &|outer| {
            if outer == 0 {
                *nested.lock().unwrap() = Some(eight_tasks_one_failing(|f| team.run(8, f)));
            }
        });
        assert_eq!(nested.into_inner().unwrap(), Some((true, 8)));
        assert_eq!(eight_tasks_one_failing(|f| run_tasks(1, 8, f)), (true, 8));
    }

    #[test]
    fn a_task_panic_is_the_callers_after_the_other_tasks() {
        assert_eq!(eight_tasks_one_failing(|f| run_tasks(2, 8, f)), (true, 8));
        // The team still works.
        let sum = AtomicUsize::new(0);
        run_tasks(2, 8, &|i| {
            sum.fetch_add(i, SeqCst);
        });
        assert_eq!(sum.load(SeqCst), 28);
    }
}
