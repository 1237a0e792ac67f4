//! Ranks as threads of one process: the [`Communicator`] of the tests, which check the bits of
//! distributed solves at several rank counts without MPI, and of machines without it.

use super::Communicator;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

/// Messages in flight between the threads of a group, by (from, to, sequence number).
#[derive(Default)]
struct Mailbox {
    messages: Mutex<HashMap<(usize, usize, u64), Vec<u64>>>,
    arrived: Condvar,
    /// A rank panicked: the others stop waiting for it (and panic too) instead of hanging.
    abandoned: std::sync::atomic::AtomicBool,
}

/// One thread's rank in a group: messages to each rank are numbered in the order they are sent,
/// and taken in that order.
pub struct ThreadGroup {
    rank: usize,
    size: usize,
    mailbox: Arc<Mailbox>,
    sent: Mutex<Vec<u64>>,
    taken: Mutex<Vec<u64>>,
}

impl ThreadGroup {
    /// Run `body` as `ranks` ranks (rank 0 on this thread, the others on threads of their own),
    /// each with its rank's communicator; the results in rank order.
    pub fn run<T: Send>(
        ranks: usize,
        body: impl Fn(Arc<dyn Communicator>) -> T + Sync,
    ) -> Vec<T> {
        Self::run_here(ranks, &body, &body)
    }

    /// [`run`](Self::run) with rank 0's `first` on this thread (which may hold what cannot
    /// cross threads: a solve's monitor) and the other ranks' `rest` on threads of their own.
    pub fn run_here<T: Send>(
        ranks: usize,
        first: impl FnOnce(Arc<dyn Communicator>) -> T,
        rest: impl Fn(Arc<dyn Communicator>) -> T + Sync,
    ) -> Vec<T> {
        let mailbox = Arc::new(Mailbox::default());
        let member = |rank| -> Arc<dyn Communicator> {
            Arc::new(ThreadGroup {
                rank,
                size: ranks,
                mailbox: Arc::clone(&mailbox),
                sent: Mutex::new(vec![0; ranks]),
                taken: Mutex::new(vec![0; ranks]),
            })
        };
        // A rank that panics tells the others, which stop waiting for it (and panic too).
        let guarded = |body: &mut dyn FnMut() -> T| {
            let run = std::panic::AssertUnwindSafe(body);
            std::panic::catch_unwind(run).unwrap_or_else(|panic| {
                let _guard = mailbox.messages.lock();
                mailbox.abandoned.store(true, std::sync::atomic::Ordering::SeqCst);
                mailbox.arrived.notify_all();
                std::panic::resume_unwind(panic)
            })
        };
        std::thread::scope(|scope| {
            let handles: Vec<_> = (1..ranks)
                .map(|rank| {
                    let (rest, comm, guarded) = (&rest, member(rank), &guarded);
                    scope.spawn(move || guarded(&mut || rest(comm.clone())))
                })
                .collect();
            let mut first = Some(first);
            let comm = member(0);
            let mut out =
                vec![guarded(&mut || (first.take().expect("rank 0 runs once"))(comm.clone()))];
            for h in handles {
                out.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
            }
            out
        })
    }

    fn send(&self, to: usize, words: Vec<u64>) {
        let seq = {
            let mut sent = self.sent.lock().unwrap();
            sent[to] += 1;
            sent[to]
        };
        let mut messages = self.mailbox.messages.lock().unwrap();
        messages.insert((self.rank, to, seq), words);
        self.mailbox.arrived.notify_all();
    }

    fn receive(&self, from: usize) -> Vec<u64> {
        let seq = {
            let mut taken = self.taken.lock().unwrap();
            taken[from] += 1;
            taken[from]
        };
        let key = (from, self.rank, seq);
        let mut messages = self.mailbox.messages.lock().unwrap();
        loop {
            if let Some(words) = messages.remove(&key) {
                return words;
            }
            if self.mailbox.abandoned.load(std::sync::atomic::Ordering::SeqCst) {
                panic!("rank {from} panicked; rank {} stops waiting for it", self.rank);
            }
            messages = self.mailbox.arrived.wait(messages).unwrap();
        }
    }
}

impl Communicator for ThreadGroup {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn all_gather(&self, mine: &[u64]) -> Vec<Vec<u64>> {
        for to in (0..self.size).filter(|&r| r != self.rank) {
            self.send(to, mine.to_vec());
        }
        (0..self.size)
            .map(|from| match from == self.rank {
                true => mine.to_vec(),
                false => self.receive(from),
            })
            .collect()
    }
    fn exchange(
        &self,
        sends: &[(usize, Vec<u64>)],
        receives: &mut [(usize, Vec<u64>)],
        during: &mut dyn FnMut(),
    ) {
        for (to, words) in sends {
            self.send(*to, words.clone());
        }
        during();
        for (from, words) in receives.iter_mut() {
            let got = self.receive(*from);
            assert_eq!(got.len(), words.len(), "halo from rank {from}: length");
            *words = got;
        }
    }
    fn kind(&self) -> &'static str {
        "threads"
    }
}
