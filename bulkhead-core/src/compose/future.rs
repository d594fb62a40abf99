//! Async calls: waits never block a thread.

use std::future::Future;

use super::{Classifier, Policies, failure};
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
        let Some(retry) = &self.retry else {
            return self.attempt_async(classify, &mut call).await;
        };
        let mut state = retry.start();
        loop {
            let result = self.attempt_async(classify, &mut call).await;
            let Some(failure) = failure(&result, classify) else {
                state.on_success();
                return result;
            };
            match state.on_failure(failure) {
                Some(delay) => retry.sleep_async(delay).await,
                None => return result,
            }
        }
    }

    async fn attempt_async<T, E, F, Fut>(
        &self,
        classify: &Classifier<'_, E>,
        call: &mut F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let Some(breaker) = &self.circuit_breaker else {
            return self.limited_async(call).await;
        };
        let permit = breaker.try_acquire().map_err(Rejection::from)?;
        let started = permit.tracks_slow_calls().then(|| self.clock.now());
        let result = self.limited_async(call).await;
        let took = started.map(|started| self.clock.now().saturating_duration_since(started));
        permit.record(self.outcome(breaker, &result, classify), took);
        result
    }

    async fn limited_async<T, E, F, Fut>(&self, call: &mut F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if let Some(limiter) = &self.rate_limiter {
            limiter.acquire_async().await.map_err(Rejection::from)?;
        }
        let guarded = async {
            let _permit = match &self.bulkhead {
                Some(bulkhead) => Some(bulkhead.enter_async().await.map_err(Rejection::from)?),
                None => None,
            };
            call().await.map_err(CallError::Inner)
        };
        match &self.timeout {
            None => guarded.await,
            Some(timeout) => match timeout.run(timeout.deadline(), guarded).await {
                Ok(result) => result,
                Err(timed_out) => Err(Rejection::from(timed_out).into()),
            },
        }
    }
}
