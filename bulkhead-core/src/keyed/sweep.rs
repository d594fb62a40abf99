//! The background sweeps: one thread for every keyed bulkhead of the
//! process, started with the first, that offers each a sweep every few
//! milliseconds (a sweep runs only when due on the bulkhead's own clock,
//! at most every quarter of its `idle_evict`).

use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::Clock;

/// A keyed bulkhead, whatever its keys' type, as the sweeper sees it.
pub(crate) trait Sweep: Send + Sync {
    /// Sweeps if due at `now`.
    fn sweep_at(&self, now: Instant);
    /// Every how often it may sweep.
    fn period(&self) -> Duration;
}

struct Entry {
    keyed: Weak<dyn Sweep>,
    clock: Arc<dyn Clock>,
}

fn entries() -> &'static Mutex<Vec<Entry>> {
    static ENTRIES: OnceLock<Mutex<Vec<Entry>>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        let started = std::thread::Builder::new()
            .name("bulkhead-keyed-sweep".to_owned())
            .spawn(run);
        // Without the thread, keys are still evicted by `evict_idle` and by
        // the sweep a new key past `max_keys` runs; nothing else depends on
        // it.
        drop(started);
        Mutex::new(Vec::new())
    })
}

/// Sweeps `keyed` from now on, while it lives.
pub(crate) fn register(keyed: Weak<dyn Sweep>, clock: &Arc<dyn Clock>) {
    let mut entries = match entries().lock() {
        Ok(entries) => entries,
        Err(poisoned) => poisoned.into_inner(),
    };
    entries.push(Entry {
        keyed,
        clock: Arc::clone(clock),
    });
}

fn run() {
    loop {
        let mut live: Vec<(Arc<dyn Sweep>, Arc<dyn Clock>)> = Vec::new();
        {
            let mut entries = match entries().lock() {
                Ok(entries) => entries,
                Err(poisoned) => poisoned.into_inner(),
            };
            entries.retain(|entry| match entry.keyed.upgrade() {
                Some(keyed) => {
                    live.push((keyed, Arc::clone(&entry.clock)));
                    true
                }
                None => false,
            });
        }
        let mut tick = Duration::from_secs(1);
        for (keyed, clock) in &live {
            // A key's `Drop` that panics in a sweep must not end the
            // thread, which sweeps every keyed bulkhead of the process.
            let swept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                keyed.sweep_at(clock.now());
            }));
            drop(swept);
            tick = tick.min(keyed.period());
        }
        drop(live);
        std::thread::sleep(tick.clamp(Duration::from_millis(5), Duration::from_secs(1)));
    }
}
