//! What a call records while its instance's telemetry records
//! ([`crate::telemetry`]).
//!
//! A sync call's code is generic over a [`Rec`], so that a call that
//! records nothing ([`NoRec`]) carries no stamp and makes no reading: its
//! stamps are `()`. An async call's is not: a future holding both
//! instantiations (one per arm of a `match`) was 880 bytes instead of 528
//! (the stamps of each arm live across several awaits, and a coroutine
//! overlaps only locals live across one), so the async path keeps `u64`
//! stamps, [`NOT_RECORDED`] while nothing records: 40 bytes more in the
//! future and a branch at each stamp.

use super::{Classifier, Policies};
use crate::rejection::{CallError, Rejection, RejectionKind};
use crate::telemetry::{Recorder, WaitOutcome};

/// Records a call's durations, or does nothing.
pub(super) trait Rec: Copy {
    /// A reading of the clock (`()` when nothing records).
    type Stamp: Copy;

    /// Reads the clock (precisely).
    fn stamp(self, policies: &Policies) -> Self::Stamp;

    /// A wait for a bulkhead slot, from `from` to now.
    fn wait(self, policies: &Policies, from: Self::Stamp, outcome: WaitOutcome);

    /// A call that got its slot, or was refused, without waiting (a
    /// sample of zero).
    fn no_wait(self, outcome: WaitOutcome);

    /// Attempt `number`, from `from` to now, ended with `result`; returns
    /// the end's stamp.
    fn attempt<T, E>(
        self,
        policies: &Policies,
        number: u32,
        from: Self::Stamp,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) -> Self::Stamp;

    /// The call, from `from` to `to`, ended with `result`.
    fn call<T, E>(
        self,
        from: Self::Stamp,
        to: Self::Stamp,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    );
}

/// Nothing recorded.
#[derive(Clone, Copy)]
pub(super) struct NoRec;

impl Rec for NoRec {
    type Stamp = ();

    #[inline(always)]
    fn stamp(self, _: &Policies) {}

    #[inline(always)]
    fn wait(self, _: &Policies, (): (), _: WaitOutcome) {}

    #[inline(always)]
    fn no_wait(self, _: WaitOutcome) {}

    #[inline(always)]
    fn attempt<T, E>(
        self,
        _: &Policies,
        _: u32,
        (): (),
        _: &Result<T, CallError<E>>,
        _: &Classifier<'_, E>,
    ) {
    }

    #[inline(always)]
    fn call<T, E>(self, (): (), (): (), _: &Result<T, CallError<E>>, _: &Classifier<'_, E>) {}
}

impl Rec for Recorder<'_> {
    type Stamp = u64;

    #[inline]
    fn stamp(self, policies: &Policies) -> u64 {
        policies.clock.now()
    }

    #[inline]
    fn wait(self, policies: &Policies, from: u64, outcome: WaitOutcome) {
        let to = policies.clock.now();
        Recorder::wait(&self, to.saturating_sub(from), outcome);
    }

    #[inline]
    fn no_wait(self, outcome: WaitOutcome) {
        Recorder::wait(&self, 0, outcome);
    }

    #[inline]
    fn attempt<T, E>(
        self,
        policies: &Policies,
        number: u32,
        from: u64,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) -> u64 {
        let to = policies.clock.now();
        let outcome = classify.outcome(result);
        Recorder::attempt(&self, number, from, to, outcome, &policies.clock);
        to
    }

    #[inline]
    fn call<T, E>(
        self,
        from: u64,
        to: u64,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) {
        Recorder::call(&self, to.saturating_sub(from), classify.outcome(result));
    }
}

/// The stamp of a reading not taken: nothing recorded (a real stamp is
/// nanoseconds since an epoch, far below it).
pub(super) const NOT_RECORDED: u64 = u64::MAX;

impl Policies {
    /// A precise reading of the clock if the telemetry records, else
    /// [`NOT_RECORDED`]. For the async path.
    #[inline(always)]
    pub(super) fn stamp(&self) -> u64 {
        match self.recorder() {
            None => NOT_RECORDED,
            Some(_) => self.clock.now(),
        }
    }

    /// A wait for a slot from `from` to now, if it was stamped, labelled by
    /// how the bulkhead answered it (`entered`).
    #[inline(always)]
    pub(super) fn entered<T>(&self, from: u64, entered: &Result<T, Rejection>) {
        // A refusal other than the bulkhead's (a deadline cut the wait) is
        // an abandoned wait.
        let outcome = match entered {
            Ok(_) => WaitOutcome::Admitted,
            Err(refused) if refused.kind() == RejectionKind::BulkheadFull => WaitOutcome::Rejected,
            Err(_) => WaitOutcome::Abandoned,
        };
        self.waited(from, outcome);
    }

    /// A wait for a slot from `from` to now, if it was stamped.
    #[inline(always)]
    pub(super) fn waited(&self, from: u64, outcome: WaitOutcome) {
        if from != NOT_RECORDED {
            self.record_wait(from, outcome);
        }
    }

    #[inline(never)]
    fn record_wait(&self, from: u64, outcome: WaitOutcome) {
        if let Some(recorder) = self.recorder() {
            Rec::wait(recorder, self, from, outcome);
        }
    }

    /// Attempt `number`, from `from` to now, if it was stamped; returns
    /// the end's stamp.
    #[inline(always)]
    pub(super) fn attempt_ended<T, E>(
        &self,
        number: u32,
        from: u64,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) -> u64 {
        if from == NOT_RECORDED {
            return NOT_RECORDED;
        }
        self.record_attempt(number, from, classify.outcome(result))
    }

    #[inline(never)]
    fn record_attempt(&self, number: u32, from: u64, outcome: crate::telemetry::Outcome) -> u64 {
        let to = self.clock.now();
        if let Some(recorder) = self.recorder() {
            Recorder::attempt(&recorder, number, from, to, outcome, &self.clock);
        }
        to
    }

    /// The call, from `start` to `end`, if both were stamped.
    #[inline(always)]
    pub(super) fn call_ended<T, E>(
        &self,
        start: u64,
        end: u64,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) {
        if start != NOT_RECORDED && end != NOT_RECORDED {
            self.record_call(end.saturating_sub(start), classify.outcome(result));
        }
    }

    #[inline(never)]
    fn record_call(&self, nanos: u64, outcome: crate::telemetry::Outcome) {
        if let Some(recorder) = self.recorder() {
            Recorder::call(&recorder, nanos, outcome);
        }
    }
}
