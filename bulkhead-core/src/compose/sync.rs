//! Calls on the caller's thread: waits block it.

use super::{Classifier, Policies, failure};
use crate::bulkhead::EnterError;
use crate::rejection::{CallError, CallTimeout, Rejection};
use crate::timeout::Timeout;

impl Policies {
    /// Runs `call` under the policies, on this thread; waits (for a retry
    /// delay, a rate-limiter permit, a bulkhead slot) block it.
    ///
    /// A sync call cannot be pre-empted: a timeout bounds the waits for a
    /// permit or slot (a wait cut short ends with `Rejection::Timeout`), and a
    /// call that overruns keeps its result and is reported as an overrun.
    ///
    /// # Errors
    ///
    /// [`CallError::Rejected`] if a policy refused the (last) attempt,
    /// [`CallError::Inner`] if it ran and failed.
    #[inline]
    pub fn call<T, E, F>(
        &self,
        classify: &Classifier<'_, E>,
        mut call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        let result = self.attempt(classify, &mut call);
        match &self.retry {
            // The first attempt succeeded, or there is no retry: nothing to
            // record, no retry state to keep.
            None => result,
            Some(_) if result.is_ok() => result,
            Some(retry) => self.retry_after_first(retry, classify, call, result),
        }
    }

    /// The retries after a failed first attempt.
    #[cold]
    #[inline(never)]
    fn retry_after_first<T, E, F>(
        &self,
        retry: &crate::retry::Retry,
        classify: &Classifier<'_, E>,
        mut call: F,
        first: Result<T, CallError<E>>,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        let mut state = retry.start();
        let mut result = first;
        loop {
            let Some(failure) = failure(&result, classify) else {
                state.on_success();
                return result;
            };
            match state.on_failure(failure) {
                Some(delay) => retry.sleep(delay),
                None => return result,
            }
            result = self.attempt(classify, &mut call);
        }
    }

    /// One attempt: the breaker around the rest.
    #[inline]
    fn attempt<T, E, F>(
        &self,
        classify: &Classifier<'_, E>,
        call: &mut F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        let Some(breaker) = &self.circuit_breaker else {
            return self.limited(call);
        };
        let permit = breaker.try_acquire().map_err(Rejection::from)?;
        let started = permit.tracks_slow_calls().then(|| self.clock.now());
        let result = self.limited(call);
        let took = started.map(|started| self.clock.now().saturating_duration_since(started));
        permit.record(self.outcome(breaker, &result, classify), took);
        result
    }

    /// The rate limiter around the rest.
    #[inline]
    fn limited<T, E, F>(&self, call: &mut F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        if let Some(limiter) = &self.rate_limiter {
            limiter.acquire().map_err(Rejection::from)?;
        }
        self.timed(call)
    }

    /// The timeout and the bulkhead around the call.
    #[inline]
    fn timed<T, E, F>(&self, call: &mut F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        let deadline = self.timeout.as_ref().and_then(Timeout::deadline);
        let _permit = match &self.bulkhead {
            None => None,
            Some(bulkhead) => match bulkhead.enter_until(deadline) {
                Ok(permit) => Some(permit),
                Err(EnterError::Full(full)) => return Err(Rejection::from(full).into()),
                // Only a timeout sets a deadline.
                Err(EnterError::DeadlineReached) => {
                    let timed_out = match &self.timeout {
                        Some(timeout) => timeout.timed_out(),
                        None => CallTimeout::new(bulkhead.instance()),
                    };
                    return Err(Rejection::from(timed_out).into());
                }
            },
        };
        let result = call();
        if let (Some(timeout), Some(deadline)) = (&self.timeout, deadline) {
            let now = self.clock.now();
            if now > deadline {
                let started = deadline.checked_sub(timeout.duration()).unwrap_or(deadline);
                timeout.overran(now.saturating_duration_since(started));
            }
        }
        result.map_err(CallError::Inner)
    }
}
