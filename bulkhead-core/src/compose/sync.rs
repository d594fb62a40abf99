//! Calls on the caller's thread: waits block it.

use std::time::Instant;

use super::record::{NoRec, Rec};
use super::{Classifier, Policies, failure, retry_after};
use crate::bulkhead::EnterError;
use crate::bulkhead::adaptive::CallOutcome;
use crate::chaos::Chaos;
use crate::clock::since;
use crate::rejection::{CallError, CallTimeout, DeadlineExceeded, Rejection};
use crate::telemetry::{Recorder, WaitOutcome};
use crate::timeout::Timeout;

/// Records a wait for a slot that began at `from` (if the call waited) and
/// ended with `outcome`.
#[inline(always)]
fn waited_for<R: Rec>(policies: &Policies, rec: R, from: Option<R::Stamp>, outcome: WaitOutcome) {
    match from {
        Some(from) => rec.wait(policies, from, outcome),
        None => rec.no_wait(outcome),
    }
}

impl Policies {
    /// Runs `call` under the policies, on this thread; waits (for a retry
    /// delay, a rate-limiter permit, a bulkhead slot) block it.
    ///
    /// A sync call cannot be pre-empted: a timeout bounds the wait for a
    /// bulkhead slot (a wait cut short ends with `Rejection::Timeout`), and a
    /// call that overruns keeps its result and is reported as an overrun.
    /// The wait for a rate-limiter permit is outside the timeout (the fixed
    /// order): the deadline counts from when the permit was granted. A
    /// hedge does not apply: the thread runs one attempt at a time.
    ///
    /// Under a deadline ([`deadline::with`](crate::deadline::with)), an
    /// attempt does not start with the retry's `min_attempt_time` or less
    /// left (the first is refused with `Rejection::DeadlineExceeded`, a
    /// retry is not made), and the waits for a rate-limiter permit and a
    /// bulkhead slot end at the deadline (`DeadlineExceeded` too).
    ///
    /// # Errors
    ///
    /// [`CallError::Rejected`] if a policy refused the (last) attempt,
    /// [`CallError::Inner`] if it ran and failed.
    #[inline]
    pub fn call<T, E, F>(&self, classify: &Classifier<'_, E>, call: F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        match self.recorder() {
            None => self.run(NoRec, classify, call),
            Some(recorder) => self.run_recorded(recorder, classify, call),
        }
    }

    /// [`call`](Self::call) while its telemetry records: out of line, so
    /// that the call that records nothing stays as it was.
    #[inline(never)]
    fn run_recorded<T, E, F>(
        &self,
        recorder: Recorder<'_>,
        classify: &Classifier<'_, E>,
        call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        self.run(recorder, classify, call)
    }

    /// The call, recorded by `rec`.
    #[inline(always)]
    fn run<T, E, F, R: Rec>(
        &self,
        rec: R,
        classify: &Classifier<'_, E>,
        mut call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        // The call's deadline, read once: without one (`None`), every
        // check below is a branch not taken.
        let deadline = crate::deadline::current();
        if let Some(retry) = &self.retry {
            retry.first_attempt();
        }
        let start = rec.stamp(self);
        let result = self.attempt(classify, &mut call, deadline, rec);
        let end = rec.attempt(self, 1, start, &result, classify);
        match &self.retry {
            // The first attempt succeeded, or there is no retry: nothing to
            // record, no retry state to keep.
            None => {
                rec.call(start, end, &result, classify);
                result
            }
            Some(_) if result.is_ok() => {
                rec.call(start, end, &result, classify);
                result
            }
            Some(retry) => {
                self.retry_after_first(retry, classify, call, result, deadline, rec, (start, end))
            }
        }
    }

    /// The retries after a failed first attempt; `times` the call's start
    /// and the first attempt's end.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn retry_after_first<T, E, F, R: Rec>(
        &self,
        retry: &crate::retry::Retry,
        classify: &Classifier<'_, E>,
        mut call: F,
        first: Result<T, CallError<E>>,
        deadline: Option<Instant>,
        rec: R,
        times: (R::Stamp, R::Stamp),
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        let (start, mut end) = times;
        let mut state = retry.start();
        let mut result = first;
        let mut number = 1;
        loop {
            let Some(failure) = failure(&result, classify) else {
                state.on_success();
                rec.call(start, end, &result, classify);
                return result;
            };
            let asked = retry_after(&result, classify);
            match state.on_failure_within(failure, asked, deadline) {
                Some(delay) => retry.sleep(delay),
                None => {
                    rec.call(start, end, &result, classify);
                    return result;
                }
            }
            number += 1;
            let from = rec.stamp(self);
            result = self.attempt(classify, &mut call, deadline, rec);
            end = rec.attempt(self, number, from, &result, classify);
        }
    }

    /// One attempt: the breaker around the rest.
    ///
    /// The clock is read at most twice per attempt however many policies
    /// need it: when the breaker times the call, its reading at the start
    /// also gives the rate limiter its period and the timeout its deadline
    /// (unless the rate limiter made the call wait), and the timeout's
    /// reading at the end also gives the breaker the call's duration.
    ///
    /// Always inlined, and so is [`limited`](Self::limited): LLVM left both
    /// out of line, and their two frames cost every sync pipeline about
    /// 1 ns (a pipeline with no policy 6.2 against 5.4 ns; BENCHMARKS.md).
    #[inline(always)]
    fn attempt<T, E, F, R: Rec>(
        &self,
        classify: &Classifier<'_, E>,
        call: &mut F,
        deadline: Option<Instant>,
        rec: R,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        if deadline.is_some_and(|deadline| !self.in_time(deadline)) {
            return Err(self.late().into());
        }
        let Some(breaker) = &self.circuit_breaker else {
            return self.limited(call, &mut None, deadline, rec);
        };
        let permit = breaker.try_acquire().map_err(Rejection::from)?;
        let started = permit.tracks_slow_calls().then(|| self.read(&self.clock));
        let mut moment = started;
        let result = self.limited(call, &mut moment, deadline, rec);
        let ended = started.map(|_| moment.unwrap_or_else(|| self.read(&self.clock)));
        // In nanoseconds: the breaker compares them as they are.
        let took = started
            .zip(ended)
            .map(|(started, ended)| ended.saturating_sub(started));
        // The end also gives a time window its second, on the same clock.
        let at = (ended.filter(|_| self.shares_clock)).map(|at| since(at, self.breaker_origin));
        // A sync call is not cut while it runs: a `DeadlineExceeded` here
        // refused it before it ran.
        self.recorded(breaker, permit, result, classify, took, at, false, false)
    }

    /// The rate limiter around the rest. `moment` holds the time the
    /// caller has just read, if any, and afterwards the time the call ended
    /// if that was read (else `None`). Under a `deadline`, a permit whose
    /// period starts at or after it is not waited for.
    #[inline(always)]
    fn limited<T, E, F, R: Rec>(
        &self,
        call: &mut F,
        moment: &mut Option<u64>,
        deadline: Option<Instant>,
        rec: R,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        if !self.shares_clock {
            *moment = None;
        }
        if let Some(limiter) = &self.rate_limiter {
            let at = *moment.get_or_insert_with(|| self.read(&self.limiter_clock));
            match limiter.acquire_on(since(at, self.limiter_origin), deadline) {
                // The reading still serves (it is recent).
                Ok(false) => {}
                // Time moved on while we waited.
                Ok(true) => *moment = None,
                Err(refused) => {
                    *moment = None;
                    return Err(refused.into());
                }
            }
            if !self.shares_clock {
                *moment = None;
            }
        }
        self.timed(call, moment, deadline, rec)
    }

    /// The timeout and the bulkhead around the call (and the chaos policy
    /// inside the bulkhead). The timeout starts at
    /// `*moment` if given (else at a reading of its own), and `*moment` is
    /// then the time the call ended if that was read (else `None`).
    ///
    /// A sync call is not pre-empted, so its deadline matters only if it
    /// waits for a slot: that wait reads the clock's precise `now` and
    /// counts its deadline from there. Otherwise the start and end readings
    /// (recent ones) only tell whether the call overran. The wait for a
    /// slot ends at the call's `deadline` too if that comes first: with
    /// `DeadlineExceeded` then (the bulkhead's instance).
    ///
    /// Always inlined too: out of line, its result came back in memory
    /// and, behind a breaker, was copied on by a load wider than the stores
    /// that wrote it, which stalls on store forwarding.
    #[inline(always)]
    fn timed<T, E, F, R: Rec>(
        &self,
        call: &mut F,
        moment: &mut Option<u64>,
        deadline: Option<Instant>,
        rec: R,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        // Taken whatever happens: what is left in `moment` is an end time.
        let start = moment.take();
        let started = (self.timeout.as_ref())
            .map(|_| start.unwrap_or_else(|| self.read(&self.timeout_clock)));
        // The timeout's deadline of a wait for a slot, if the call waited.
        let mut waited = None;
        // Whether the call's deadline ended that wait, rather than the
        // timeout's.
        let mut cut = false;
        // When the call began to wait for a slot, if it had to.
        let mut wait_from = None;
        let mut permit = match &self.bulkhead {
            None => None,
            Some(bulkhead) => match bulkhead.enter_until_with(|| {
                wait_from = Some(rec.stamp(self));
                waited = self.timeout.as_ref().and_then(Timeout::deadline);
                match deadline {
                    Some(deadline) if waited.is_none_or(|waited| deadline <= waited) => {
                        cut = true;
                        Some(deadline)
                    }
                    _ => waited,
                }
            }) {
                Ok(permit) => {
                    waited_for(self, rec, wait_from, WaitOutcome::Admitted);
                    Some(permit)
                }
                Err(EnterError::Full(full)) => {
                    waited_for(self, rec, wait_from, WaitOutcome::Rejected);
                    return Err(Rejection::from(full).into());
                }
                Err(EnterError::DeadlineReached) if cut => {
                    waited_for(self, rec, wait_from, WaitOutcome::Abandoned);
                    return Err(Rejection::from(DeadlineExceeded::new(bulkhead.instance())).into());
                }
                // Otherwise only a timeout sets a deadline.
                Err(EnterError::DeadlineReached) => {
                    waited_for(self, rec, wait_from, WaitOutcome::Abandoned);
                    let timed_out = match &self.timeout {
                        Some(timeout) => timeout.timed_out(),
                        None => CallTimeout::new(bulkhead.instance()),
                    };
                    return Err(Rejection::from(timed_out).into());
                }
            },
        };
        let result = self.chaotic(call);
        if let Some(permit) = &mut permit {
            permit.set_outcome(CallOutcome::of(&result));
        }
        if let (Some(timeout), Some(started)) = (&self.timeout, started) {
            let now = self.read(&self.timeout_clock);
            match waited {
                None => timeout.check_took(now.saturating_sub(started)),
                Some(deadline) => timeout.check_overrun(deadline, self.timeout_clock.instant(now)),
            }
            if self.shares_clock {
                *moment = Some(now);
            }
        }
        result
    }

    /// The chaos policy around the call: what it injects (a latency slept
    /// on this thread, a fault in the call's place), then the call. Without
    /// chaos, or with chaos disabled, a branch and a load.
    #[inline(always)]
    fn chaotic<T, E, F>(&self, call: &mut F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        if let Some(injection) = self.chaos.as_ref().and_then(Chaos::draw) {
            injection.apply().map_err(Rejection::from)?;
        }
        call().map_err(CallError::Inner)
    }
}
