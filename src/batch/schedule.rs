//! A study's solves in flight at once (`--in-flight N`): N worker threads, each with a GPU
//! stream of its own ([`Lane::own`]), take the runs in the study's order, so that the small
//! solves of a study, each of which leaves the GPU mostly idle while it waits on launches and
//! reductions, overlap on the device. The unit is a run, not a matrix: a matrix whose runs take
//! long (bcsstk13's took a third of the shared matrices' study) spreads over the workers
//! instead of running its runs in series. A matrix is loaded, and each of its preconditioners
//! built, once, by the first worker that needs it (the others wait for it), and dropped after
//! its last run. Every solve stays alone on its stream, so its bits are those it has alone; its
//! times include the others' contention, and its record says how many were in flight.
//!
//! The thread that called [`run_study`](super::run_study) keeps the store and the observer:
//! the workers send it what happened, it appends each record as it arrives (in the order the
//! runs finish) and polls the observer; a stop sets a flag that every worker's solve checks at
//! each iteration (a run cut short is not recorded, as with one solve at a time). A matrix
//! large enough to fill the GPU alone runs with no other beside it (a write lock that the other
//! matrices' runs hold for reading).

use super::{Loaded, MatrixInput, RunContext, RunKey, RunRecord, RunSink, StudySpec, run_key};
use crate::error::{Error, Result};
use crate::solver::dispatch::Lane;
use crate::sparse::CsrMatrix;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// `--in-flight` with `--backend cuda` when not given: the shared matrices' study on an H200
/// (one lease, c93edfc, `benches/results/gpu-study.md`) took 35.2 s with 16 in flight, 29.4
/// and 33.2 with 32, 28.1 with 48, 28.9 and 28.1 with 64. Each solve in flight is a host
/// thread that mostly waits, yielding its core while it does.
pub(super) const GPU_IN_FLIGHT: usize = 64;

/// How often the recording thread looks at the observer's stop flag while no message comes.
const POLL: Duration = Duration::from_millis(20);

/// What a worker tells the recording thread.
enum Message {
    Started(String, RunKey),
    Finished(Box<RunRecord>),
    /// The worker's matrix stopped early: a stop, or a run cancelled.
    Stopped,
    Failed(Error),
}

/// A matrix of the study: loaded at its first run, dropped after its last.
struct Slot<'a> {
    m: &'a MatrixInput,
    loaded: Mutex<Option<Loaded>>,
    remaining: AtomicUsize,
}

/// Run the runs of `work` on `in_flight` workers, recording through `recorder`.
pub(super) fn run_in_flight(
    spec: &StudySpec,
    work: Vec<(&MatrixInput, Vec<RunKey>)>,
    in_flight: usize,
    recorder: &mut super::Recorder<'_>,
) -> Result<()> {
    let slots: Vec<Slot> = work
        .iter()
        .map(|(m, keys)| Slot {
            m,
            loaded: Mutex::new(None),
            remaining: AtomicUsize::new(keys.len()),
        })
        .collect();
    let runs: Vec<(usize, RunKey)> = work
        .into_iter()
        .enumerate()
        .flat_map(|(i, (_, keys))| keys.into_iter().map(move |k| (i, k)))
        .collect();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let alone = RwLock::new(());
    let (sender, receiver) = channel();
    std::thread::scope(|scope| {
        for _ in 0..in_flight.min(runs.len()) {
            let sender = sender.clone();
            let (next, stop, alone, runs, slots) = (&next, &stop, &alone, &runs, &slots);
            scope.spawn(move || {
                let lane = match Lane::own(spec.backend) {
                    Ok(lane) => lane,
                    Err(e) => return drop(sender.send(Message::Failed(e))),
                };
                let mut sink = Worker {
                    sender,
                    stop,
                    alone,
                    guard: None,
                    lane: &lane,
                };
                let run = RunContext {
                    spec,
                    lane: &lane,
                    in_flight,
                };
                while let Some((i, key)) = runs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if sink.stop_requested() {
                        break;
                    }
                    let slot = &slots[*i];
                    let (problem, precond) = {
                        let mut loaded = slot.loaded.lock().unwrap_or_else(|e| e.into_inner());
                        let loaded = loaded.get_or_insert_with(|| Loaded::load(slot.m, spec));
                        let precond = loaded.problem.is_ok().then(|| loaded.precond(key));
                        (loaded.problem.clone(), precond)
                    };
                    let record = run_key(
                        slot.m,
                        key.clone(),
                        &problem,
                        precond.as_deref(),
                        &run,
                        &mut sink,
                    );
                    sink.guard = None;
                    if slot.remaining.fetch_sub(1, Ordering::Relaxed) == 1 {
                        *slot.loaded.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    }
                    let sent = match record {
                        Some(record) => sink.run_finished(record),
                        None => {
                            let _ = sink.sender.send(Message::Stopped);
                            break;
                        }
                    };
                    if let Err(e) = sent {
                        let _ = sink.sender.send(Message::Failed(e));
                        break;
                    }
                }
            });
        }
        drop(sender);
        record(receiver, &stop, recorder)
    })
}

/// The recording thread's loop: until every worker has hung up.
fn record(
    receiver: Receiver<Message>,
    stop: &AtomicBool,
    recorder: &mut super::Recorder<'_>,
) -> Result<()> {
    let mut failure = None;
    loop {
        if recorder.stop_requested() && !stop.swap(true, Ordering::Relaxed) {
            recorder.outcome.interrupted = true;
        }
        match receiver.recv_timeout(POLL) {
            Ok(Message::Started(name, key)) => recorder.run_started(&name, &key),
            Ok(Message::Finished(record)) => {
                if let Err(e) = recorder.run_finished(*record) {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(e);
                }
            }
            Ok(Message::Stopped) => {
                stop.store(true, Ordering::Relaxed);
                recorder.outcome.interrupted = true;
            }
            Ok(Message::Failed(e)) => {
                stop.store(true, Ordering::Relaxed);
                failure.get_or_insert(e);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A worker's sink: messages to the recording thread, the shared stop flag, and the lock that
/// lets a matrix that fills the GPU run alone.
struct Worker<'a> {
    sender: Sender<Message>,
    stop: &'a AtomicBool,
    alone: &'a RwLock<()>,
    guard: Option<Guard<'a>>,
    lane: &'a Lane,
}

/// Held for a matrix's runs: shared, or exclusive for one that fills the GPU.
enum Guard<'a> {
    Beside(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Alone(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
}

impl RunSink for Worker<'_> {
    fn stop_requested(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    fn loaded(&mut self, a: &CsrMatrix) {
        // (a poisoned lock only means another worker panicked: the lock itself guards nothing)
        self.guard = Some(match self.lane.fills_device(a) {
            true => Guard::Alone(self.alone.write().unwrap_or_else(|e| e.into_inner())),
            false => Guard::Beside(self.alone.read().unwrap_or_else(|e| e.into_inner())),
        });
    }
    fn run_started(&mut self, name: &str, key: &RunKey) {
        let _ = self
            .sender
            .send(Message::Started(name.to_string(), key.clone()));
    }
    fn iteration(&mut self, _iteration: usize, _relative_residual: f64) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }
    fn run_finished(&mut self, record: RunRecord) -> Result<()> {
        self.sender
            .send(Message::Finished(Box::new(record)))
            .map_err(|_| Error::Config("the study's recording thread has stopped".into()))
    }
}
