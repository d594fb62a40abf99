//! Async calls: waits never block a thread.
//!
//! One `async fn` holds every layer, so that a call through several policies
//! is one state machine rather than a stack of nested futures; only the part
//! a timeout must be able to drop (the bulkhead and the call) is a future of
//! its own.

use std::future::Future;
use std::time::Duration;

use super::{Classifier, Policies, failure};
use crate::bulkhead::BulkheadPermit;
use crate::bulkhead::adaptive::CallOutcome;
use crate::clock::since;
use crate::rejection::{CallError, Rejection};

impl Policies {
    /// Runs the future `call` makes under the policies, without blocking a
    /// thread. The bulkhead slot is held until that future completes or is
    /// dropped; a timeout drops it at the deadline (freeing the slot) and
    /// ends the attempt with `Rejection::Timeout`.
    ///
    /// Nothing happens until the returned future is first polled.
    ///
    /// # Errors
    ///
    /// As for [`call`](Self::call).
    pub async fn call_async<T, E, F, Fut>(
        &self,
        classify: &Classifier<'_, E>,
        mut call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut retry = self.retry.as_ref().map(|retry| (retry, retry.start()));
        loop {
            // One attempt: the breaker around the rate limiter around the
            // timeout around the bulkhead around the call.
            let permit = match &self.circuit_breaker {
                None => None,
                Some(breaker) => match breaker.try_acquire() {
                    // The permit alone (two words) crosses the awaits: see
                    // `Ticket` for why its layout matters here.
                    Ok(permit) => Some(permit),
                    Err(open) => {
                        let result = Err(Rejection::from(open).into());
                        match self.retry_after(&mut retry, &result, classify) {
                            Some(delay) => {
                                if let Some((retry, _)) = &retry {
                                    retry.sleep_async(delay).await;
                                }
                                continue;
                            }
                            None => return result,
                        }
                    }
                },
            };
            let started = match &permit {
                Some(permit) if permit.tracks_slow_calls() => Some(self.read(&self.clock)),
                _ => None,
            };
            // One clock reading serves the breaker, the rate limiter and the
            // timeout's deadline (unless the rate limiter makes us wait).
            let mut moment = started.filter(|_| self.shares_clock);
            let limited = match &self.rate_limiter {
                Some(limiter) => {
                    let at = *moment.get_or_insert_with(|| self.read(&self.limiter_clock));
                    match limiter.acquire_async_on(since(at, self.limiter_origin)) {
                        Ok(None) => Ok(()),
                        Ok(Some(reserved)) => {
                            moment = None;
                            reserved.await.map_err(Rejection::from)
                        }
                        Err(limited) => Err(Rejection::from(limited)),
                    }
                }
                None => Ok(()),
            };
            let moment = moment.filter(|_| self.shares_clock);
            let result = match limited {
                Err(rejection) => Err(rejection.into()),
                Ok(()) => match &self.timeout {
                    // Without a timeout the bulkhead and the call are
                    // awaited here rather than in `guarded`: the output of
                    // a nested state machine's out-of-line poll is copied
                    // out of it, and that copy stalls on store forwarding.
                    None => match &self.bulkhead {
                        None => call().await.map_err(CallError::Inner),
                        Some(bulkhead) => match bulkhead.enter_async().await {
                            Ok(permit) => held(permit, call()).await,
                            Err(full) => Err(Rejection::from(full).into()),
                        },
                    },
                    Some(timeout) => {
                        let start = moment.unwrap_or_else(|| self.read(&self.timeout_clock));
                        match timeout
                            .run_from_recent(start, &self.timeout_clock, self.guarded(&mut call))
                            .await
                        {
                            Ok(result) => result,
                            Err(timed_out) => Err(Rejection::from(timed_out).into()),
                        }
                    }
                },
            };
            if let (Some(permit), Some(breaker)) = (permit, &self.circuit_breaker) {
                let ended = started.map(|_| self.read(&self.clock));
                let took = started
                    .zip(ended)
                    .map(|(started, ended)| Duration::from_nanos(ended.saturating_sub(started)));
                let at =
                    (ended.filter(|_| self.shares_clock)).map(|at| since(at, self.breaker_origin));
                permit.record_at(self.outcome(breaker, &result, classify), took, at);
            }
            match self.retry_after(&mut retry, &result, classify) {
                Some(delay) => {
                    if let Some((retry, _)) = &retry {
                        retry.sleep_async(delay).await;
                    }
                }
                None => return result,
            }
        }
    }

    /// What the retry makes of an attempt's result: `Some(delay)` to try
    /// again after `delay`, `None` to return it.
    #[inline]
    fn retry_after<T, E>(
        &self,
        retry: &mut Option<(&crate::retry::Retry, crate::retry::RetryState<'_>)>,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) -> Option<std::time::Duration> {
        let (_, state) = retry.as_mut()?;
        match failure(result, classify) {
            None => {
                if let Some((_, state)) = retry.take() {
                    state.on_success();
                }
                None
            }
            Some(failure) => state.on_failure(failure),
        }
    }

    /// The bulkhead around the call: what a timeout drops at its deadline.
    async fn guarded<T, E, F, Fut>(&self, call: &mut F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        match &self.bulkhead {
            Some(bulkhead) => {
                let permit = bulkhead.enter_async().await.map_err(Rejection::from)?;
                held(permit, call()).await
            }
            None => call().await.map_err(CallError::Inner),
        }
    }
}

/// Runs `call` holding `permit`, telling an adaptive bulkhead how it ended:
/// dropped while it runs (a timeout or a caller may drop it), then as its
/// result says.
#[inline]
async fn held<T, E>(
    mut permit: BulkheadPermit<'_>,
    call: impl Future<Output = Result<T, E>>,
) -> Result<T, CallError<E>> {
    permit.set_outcome(CallOutcome::Dropped);
    let result = call.await;
    permit.set_outcome(CallOutcome::of(&result));
    result.map_err(CallError::Inner)
}
