//! One import point for the synchronisation primitives the policies use, so
//! the same code runs on `std` and, under `--cfg loom`, on loom's model
//! checker (the shape of tokio's `src/loom/mod.rs`).

#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, atomic};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(not(loom))]
pub(crate) use std::sync::OnceLock;

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, atomic};

/// `std::sync::OnceLock`'s `get` and `set` on loom's mutex, so that the
/// model sees the slot's synchronisation. The value is leaked (models are
/// short): `get` can then hand out a reference without holding the lock.
#[cfg(loom)]
#[derive(Debug)]
pub(crate) struct OnceLock<T: 'static> {
    value: Mutex<Option<&'static T>>,
}

#[cfg(loom)]
impl<T: 'static> Default for OnceLock<T> {
    fn default() -> Self {
        OnceLock {
            value: Mutex::new(None),
        }
    }
}

#[cfg(loom)]
impl<T: 'static> OnceLock<T> {
    pub(crate) fn get(&self) -> Option<&T> {
        *lock(&self.value)
    }

    pub(crate) fn set(&self, value: T) -> Result<(), T> {
        let mut slot = lock(&self.value);
        if slot.is_some() {
            return Err(value);
        }
        *slot = Some(Box::leak(Box::new(value)));
        Ok(())
    }
}
#[cfg(loom)]
pub(crate) mod thread {
    //! `std::thread`'s park and unpark on top of loom's.
    //!
    //! In std an unpark that arrives while the thread is busy (or blocked on a
    //! mutex) is kept as a token for its next `park`, and a thread blocked on
    //! a mutex stays blocked until the mutex is free. Loom keeps the unpark
    //! only if the thread is runnable: one that finds it blocked on a mutex
    //! wakes it from the mutex wait (loom then fails, finding the mutex still
    //! held) and is gone, so a later `park` would hang although std's would
    //! return. An explicit token restores std's meaning, and loom's unpark is
    //! called only while the thread is in `park`, where it can only be
    //! parked, not waiting for a mutex. Every access is a read-modify-write:
    //! loom (0.7) may let a later swap read an older value than a plain
    //! store's.

    use std::sync::Arc;

    use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};

    #[derive(Debug, Default)]
    struct Token {
        /// An unpark not yet consumed by a `park`.
        unparked: AtomicBool,
        /// The thread is in `park`.
        parking: AtomicBool,
    }

    loom::thread_local! {
        static TOKEN: Arc<Token> = Arc::new(Token::default());
    }

    #[derive(Debug, Clone)]
    pub(crate) struct Thread {
        thread: loom::thread::Thread,
        token: Arc<Token>,
    }

    impl Thread {
        pub(crate) fn unpark(&self) {
            self.token.unparked.swap(true, SeqCst);
            // Either the thread's `park` sees the token, or we see it
            // parking (or both): no wake-up is lost.
            if self.token.parking.fetch_or(false, SeqCst) {
                self.thread.unpark();
            }
        }
    }

    pub(crate) fn yield_now() {
        loom::thread::yield_now();
    }

    pub(crate) fn current() -> Thread {
        Thread {
            thread: loom::thread::current(),
            token: TOKEN.with(Arc::clone),
        }
    }

    pub(crate) fn park() {
        TOKEN.with(|token| {
            token.parking.swap(true, SeqCst);
            while !token.unparked.swap(false, SeqCst) {
                loom::thread::park();
            }
            token.parking.swap(false, SeqCst);
        });
    }
}

#[cfg(loom)]
std::thread_local! {
    /// Whether a model asked for [`explore_remaps`]. A `std` thread-local:
    /// loom runs every thread of a model on the test's own thread.
    static EXPLORE_REMAPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Under loom: has the release path make one more dependent access before
/// it reads its link field's mapping, so that loom's search tries a move's
/// remapping of the field in between (without it, it does not: its issues
/// 166 and 392). It doubles the search of every model that releases a
/// slot past its reservation, so only the models of remapping ask for it.
#[cfg(loom)]
#[doc(hidden)]
pub fn explore_remaps(on: bool) {
    EXPLORE_REMAPS.with(|flag| flag.set(on));
}

#[cfg(loom)]
pub(crate) fn exploring_remaps() -> bool {
    EXPLORE_REMAPS.with(std::cell::Cell::get)
}

/// Locks `mutex`, ignoring poisoning.
///
/// No user code runs while one of our locks is held, so a poisoned lock can
/// only come from a bug of ours that already panicked elsewhere; the data it
/// guards is kept consistent by every critical section before anything that
/// could unwind, so carrying on is sound and panicking again would only turn
/// one failure into many.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// [`lock`] for reading a `RwLock`.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    match lock.read() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// [`lock`] for writing a `RwLock`.
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// A read of a counter that read-modify-writes change: a load, but a
/// read-modify-write under loom, whose 0.7 trips an internal assertion
/// (`rt/atomic.rs`, "this sometimes fails") on plain loads of such words in
/// the keyed bulkhead's models. The models lose only stale reads, which
/// cost a failed compare-exchange and a retry, or a count a moment old.
pub(crate) trait Peek {
    type Value;
    fn peek(&self) -> Self::Value;
}

macro_rules! peek {
    ($($atomic:ident => $value:ty),*) => {$(
        impl Peek for atomic::$atomic {
            type Value = $value;
            #[inline(always)]
            fn peek(&self) -> $value {
                #[cfg(not(loom))]
                return self.load(atomic::Ordering::Relaxed);
                #[cfg(loom)]
                return self.fetch_add(0, atomic::Ordering::SeqCst);
            }
        }
    )*};
}

peek!(AtomicU64 => u64, AtomicUsize => usize, AtomicU32 => u32);

/// [`Peek::peek`].
#[inline(always)]
pub(crate) fn peek<A: Peek>(atomic: &A) -> A::Value {
    atomic.peek()
}
