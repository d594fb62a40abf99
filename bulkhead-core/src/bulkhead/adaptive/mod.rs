//! Adaptive limits: an algorithm moves a bulkhead's limit between
//! `min_concurrent` and `max_concurrent` from the hold times of its calls.
//!
//! Every admitted call is a sample: how long it held its slot (two recent
//! clock readings) and how it ended ([`CallOutcome`]). Samples gather in
//! windows (`window.rs`, lock-free: one atomic addition per release); the
//! release that finds its window over closes it (`control/`, under a
//! lock it only tries to take) and runs the
//! algorithm: [`Aimd`] (`aimd.rs`), [`Vegas`] (`vegas.rs`) or
//! [`Gradient2`] (`gradient2.rs`). A new limit goes through the live-resize
//! path of [`Bulkhead::set_max_concurrent`](crate::Bulkhead::set_max_concurrent),
//! and within a resource's budget through its [`Room`] (`room.rs`).

mod aimd;
mod control;
mod gradient2;
#[cfg(all(test, loom))]
mod loom_tests;
mod room;
mod rule;
mod sampling;
mod snapshot;
#[cfg(all(test, not(loom)))]
mod tests;
mod vegas;
mod window;

pub use aimd::{Aimd, AimdBuilder};
pub use gradient2::{Gradient2, Gradient2Builder};
pub use room::Room;
pub use sampling::{Sampling, SamplingBuilder};
pub use snapshot::AdaptiveSnapshot;
pub use vegas::{Vegas, VegasBuilder};

use std::fmt;
use std::sync::Arc;

use super::config::BulkheadConfig;
use super::semaphore::Released;
use super::{Limits, Shared};
use crate::loom::{Mutex, MutexGuard, lock};
use control::{Algorithm, Change, Controller};
use window::Samples;

/// Which algorithm moves a bulkhead's limit, if any: the `adaptive` key.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Adaptive, BulkheadConfig};
///
/// assert_eq!(Adaptive::parse("adaptive", "gradient2"), Ok(Adaptive::Gradient2));
/// assert_eq!(Adaptive::parse("adaptive", "tcp").unwrap_err().code(), "ATR-010");
/// let config = BulkheadConfig::builder()
///     .max_concurrent(200)
///     .adaptive(Adaptive::Gradient2)
///     .build()?;
/// assert_eq!(config.initial_concurrent(), 20);
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Adaptive {
    /// The limit is `max_concurrent`, and moves only when told to.
    #[default]
    Off,
    /// Additive increase, multiplicative decrease ([`Aimd`]).
    Aimd,
    /// TCP Vegas' queue estimate ([`Vegas`]).
    Vegas,
    /// Netflix's Gradient2 ([`Gradient2`]).
    Gradient2,
}

crate::config::choice_names! {
    Adaptive {
        Off => "off",
        Aimd => "aimd",
        Vegas => "vegas",
        Gradient2 => "gradient2",
    }
    /// The name used in attributes and configuration: `off`, `aimd`,
    /// `vegas` or `gradient2`.
    fn name;
    /// Parses a name, as given for `key`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidChoice`](crate::ConfigError::InvalidChoice) (ATR-010) for anything but the four
    /// names.
    fn parse;
}

/// How a call that held a bulkhead slot ended, as an adaptive bulkhead's
/// algorithm sees it; set on its permit with
/// [`BulkheadPermit::set_outcome`](crate::BulkheadPermit::set_outcome).
///
/// A permit dropped without one counts as a success, or as an error if its
/// thread is panicking. The compositions (`Policies`, pipelines, the
/// attributes' generated code) set it from the call's result, and mark an
/// async call [`Dropped`](Self::Dropped) while it runs, so that a future
/// dropped before it completes (a timeout, a cancelled request) counts as
/// dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CallOutcome {
    /// The call returned `Ok`: its hold time is a latency sample.
    #[default]
    Success,
    /// The call returned `Err` (or panicked): counted, its hold time left
    /// out of latency, not a congestion signal unless
    /// [`Sampling::errors_as_drops`].
    Error,
    /// The call was dropped before it ended (timed out, cancelled): a
    /// congestion signal.
    Dropped,
}

impl CallOutcome {
    /// `Success` for `Ok`, `Error` for `Err`.
    pub fn of<T, E>(result: &Result<T, E>) -> Self {
        match result {
            Ok(_) => CallOutcome::Success,
            Err(_) => CallOutcome::Error,
        }
    }
}

std::thread_local! {
    /// Set while a hedged call drops the attempts another attempt beat.
    static BEATEN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Until it is dropped, the calls dropped on this thread are attempts that
/// another attempt of the same call beat (a hedge's race): an adaptive
/// bulkhead takes no sample from them, as from a rejection. Their hold time
/// was cut short and says nothing of the dependency, and their being
/// dropped is no congestion.
pub(crate) fn dropping_beaten_attempts() -> BeatenAttempts {
    BeatenAttempts(BEATEN.replace(true))
}

/// See [`dropping_beaten_attempts`]; holds the flag's value before.
#[derive(Debug)]
pub(crate) struct BeatenAttempts(bool);

impl Drop for BeatenAttempts {
    fn drop(&mut self) {
        BEATEN.set(self.0);
    }
}

/// An adaptive bulkhead's algorithm: the samples of the open window, and
/// the controller the closing call runs.
pub(in crate::bulkhead) struct Limiter {
    samples: Samples,
    control: Mutex<Controller>,
}

impl Limiter {
    /// The limiter of a bulkhead configured with `config`, if it is
    /// adaptive, starting at `now` (a stamp); `seed` makes its probe times
    /// (and so a run) repeatable.
    pub(in crate::bulkhead) fn new(config: &BulkheadConfig, seed: u64, now: u64) -> Option<Self> {
        let algorithm = match config.adaptive() {
            Adaptive::Off => return None,
            Adaptive::Aimd => Algorithm::Aimd(config.aimd()),
            Adaptive::Vegas => Algorithm::Vegas(config.vegas()),
            Adaptive::Gradient2 => Algorithm::Gradient2(config.gradient2(), Default::default()),
        };
        let bounds = (
            config.min_concurrent(),
            config.initial_concurrent(),
            config.max_concurrent(),
        );
        let mut control = Controller::new(algorithm, config.sampling(), bounds, seed, now);
        let _ = control.set_reserved(config.reserved_set());
        let samples = Samples::default();
        samples.close_at(control.first_close());
        Some(Limiter {
            samples,
            control: Mutex::new(control),
        })
    }

    /// The limit it starts with.
    pub(in crate::bulkhead) fn initial_limit(&self) -> u32 {
        lock(&self.control).limit()
    }

    /// Takes in the sample of a call admitted at `started` and released at
    /// `now` (stamps), whose release found `released`; closes the window
    /// if it is over.
    #[inline]
    pub(in crate::bulkhead) fn sample(
        &self,
        shared: &Shared,
        (started, now): (u64, u64),
        outcome: CallOutcome,
        released: Released,
    ) {
        let outcome = match outcome {
            CallOutcome::Success if std::thread::panicking() => CallOutcome::Error,
            // Beaten by another attempt of its call: no sample.
            CallOutcome::Dropped if BEATEN.get() => return,
            outcome => outcome,
        };
        self.samples
            .record(started, now.saturating_sub(started), outcome, released);
        if self.samples.due(now) {
            self.close(shared, now);
        }
    }

    /// Closes the window at `now`, unless another call is closing it.
    #[cold]
    #[inline(never)]
    fn close(&self, shared: &Shared, now: u64) {
        let mut control = match self.control.try_lock() {
            Ok(control) => control,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // Another call is closing it: these samples go to the next.
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        if !self.samples.due(now) {
            return;
        }
        let decision = control.close(now, &self.samples);
        if let Some(admitted) = decision.sample {
            self.samples.sample_admitted(admitted);
        }
        if let Some(change) = decision.change {
            apply(shared, &control, change, |_| {});
        }
        self.samples.close_at(decision.close_at);
    }

    /// Moves the ceiling.
    pub(in crate::bulkhead) fn set_ceiling(&self, shared: &Shared, ceiling: u32) {
        let mut control = lock(&self.control);
        let change = control.set_ceiling(ceiling);
        apply(shared, &control, change, |_| {});
    }

    /// Keeps `reserved` of its resource's budget as its own (see
    /// `Controller::set_reserved`).
    pub(in crate::bulkhead) fn set_reserved(&self, shared: &Shared, reserved: Option<u32>) {
        let mut control = lock(&self.control);
        let change = control.set_reserved(reserved);
        apply(shared, &control, change, |_| {});
    }

    /// Works under `cap` from now on (`None`: no cap); returns the limit in
    /// force.
    pub(in crate::bulkhead) fn set_cap(&self, shared: &Shared, cap: Option<u32>) -> u32 {
        let mut control = lock(&self.control);
        let change = control.set_cap(cap);
        apply(shared, &control, change, |limits| limits.cap = cap)
    }

    /// Grows into `room` from now on.
    pub(in crate::bulkhead) fn set_room(&self, shared: &Shared, room: Option<Arc<Room>>) {
        let mut control = lock(&self.control);
        if let Some(change) = control.set_room(room) {
            apply(shared, &control, change, |_| {});
        }
    }

    /// Gives back room its resource's budget no longer has.
    pub(in crate::bulkhead) fn reclaim(&self, shared: &Shared) {
        let mut control = lock(&self.control);
        if let Some(change) = control.reclaim() {
            apply(shared, &control, change, |_| {});
        }
    }

    pub(in crate::bulkhead) fn snapshot(&self, shared: &Shared) -> AdaptiveSnapshot {
        lock(&self.control).snapshot(|stamp| shared.timeline.instant(stamp))
    }

    /// The snapshot and `read`'s reading under the same lock, that of
    /// every change of the limit: the two agree.
    pub(in crate::bulkhead) fn snapshot_with<R>(
        &self,
        shared: &Shared,
        read: impl FnOnce() -> R,
    ) -> (AdaptiveSnapshot, R) {
        let control = lock(&self.control);
        let read = read();
        (
            control.snapshot(|stamp| shared.timeline.instant(stamp)),
            read,
        )
    }
}

/// Puts a change of the algorithm's limit into effect, with `also` (a cap)
/// under the same lock: the semaphore's limit first (the smaller of the
/// algorithm's and the cap), publishing `LimitChanged` if it changed, then
/// the room it frees. Returns the limit in force.
fn apply(
    shared: &Shared,
    control: &MutexGuard<'_, Controller>,
    change: Change,
    also: impl FnOnce(&mut Limits),
) -> u32 {
    let in_force = shared.change_limits(|limits| {
        limits.configured = control.ceiling();
        limits.adaptive = Some(change.to);
        also(limits);
    });
    control.give_back(change.give_back);
    in_force
}

impl Drop for Limiter {
    /// A bulkhead that is gone gives its room back.
    fn drop(&mut self) {
        let control = match self.control.get_mut() {
            Ok(control) => control,
            Err(poisoned) => poisoned.into_inner(),
        };
        let _ = control.set_room(None);
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter").finish_non_exhaustive()
    }
}
