//! # Implementation details
//!
//! The lock that serialises a registry's declaration batches, reloads,
//! budget changes and `set_max_concurrent`, so that each sees the others'
//! results whole (a budget is never checked against a stale limit).
//!
//! It is reentrant: the thread that holds it may take it again. A thread
//! holding an open batch ([`Declarations`](crate::Declarations)) therefore
//! runs those calls at once instead of waiting for itself forever; they
//! take the batch's uncommitted instances into account (the stores keep
//! them, see `Store::declare`). Other threads wait until the holder has
//! released it as many times as it took it.
//!
//! The state is the owning thread and how many times it holds the lock,
//! behind a `std` mutex held only to read or change them; waiters sleep on
//! a condition variable. A guard is released on the thread that took it:
//! it is not `Send`.

use std::marker::PhantomData;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};

/// A reentrant lock without data; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Serial {
    owner: Mutex<Owner>,
    released: Condvar,
}

#[derive(Debug, Default)]
struct Owner {
    thread: Option<ThreadId>,
    /// How many guards the owning thread holds.
    depth: usize,
}

impl Serial {
    /// Takes the lock, waiting while another thread holds it; at once if
    /// this thread holds it already.
    pub(crate) fn lock(&self) -> SerialGuard<'_> {
        let me = thread::current().id();
        let mut owner = self.owner();
        while owner.thread.is_some_and(|thread| thread != me) {
            owner = self
                .released
                .wait(owner)
                .unwrap_or_else(PoisonError::into_inner);
        }
        owner.thread = Some(me);
        owner.depth += 1;
        SerialGuard {
            serial: self,
            _not_send: PhantomData,
        }
    }

    fn owner(&self) -> MutexGuard<'_, Owner> {
        // Nothing panics while it is held: its state is always whole.
        self.owner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One hold of a [`Serial`] lock, released when dropped (also while
/// unwinding, so a panic under the lock does not leave it held).
#[derive(Debug)]
pub(crate) struct SerialGuard<'a> {
    serial: &'a Serial,
    /// Released on the thread that took it, which the lock records: a
    /// guard cannot move to another thread (a std guard cannot either).
    _not_send: PhantomData<MutexGuard<'static, ()>>,
}

impl Drop for SerialGuard<'_> {
    fn drop(&mut self) {
        let mut owner = self.serial.owner();
        owner.depth -= 1;
        if owner.depth == 0 {
            owner.thread = None;
            drop(owner);
            self.serial.released.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_holding_thread_takes_it_again_and_others_wait_for_the_last_release() {
        let serial = Arc::new(Serial::default());
        let outer = serial.lock();
        let inner = serial.lock();
        assert_eq!(serial.owner().depth, 2);
        let taken = Arc::new(AtomicBool::new(false));
        let (done, finished) = mpsc::channel();
        let other = {
            let (serial, taken) = (Arc::clone(&serial), Arc::clone(&taken));
            thread::spawn(move || {
                let _guard = serial.lock();
                taken.store(true, Ordering::SeqCst);
                done.send(()).unwrap();
            })
        };
        drop(inner);
        let owner = serial.owner();
        assert_eq!(
            (owner.thread, owner.depth),
            (Some(thread::current().id()), 1)
        );
        drop(owner);
        assert!(!taken.load(Ordering::SeqCst), "still held once");
        drop(outer);
        // Bounded, so that a lost wake-up fails instead of hanging.
        finished.recv_timeout(Duration::from_secs(10)).unwrap();
        other.join().unwrap();
        assert_eq!(serial.owner().depth, 0);
    }
}
