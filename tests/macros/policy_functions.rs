//! `#[retry]`, `#[circuit_breaker]`, `#[timeout]` and `#[rate_limiter]` on
//! functions with a body, with or without `#[bulkhead]`: the body runs once
//! per attempt, under policies resolved once from `Registry::global()`.
//! Every function here has its own id, since the global registry is shared
//! by all tests of this binary.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use bulkhead::circuit_breaker::CircuitState;
use bulkhead::{
    Registry, RejectionKind, bulkhead, circuit_breaker, function_policy_errors, rate_limiter,
    retry, timeout,
};

use crate::composition::Script;
use crate::support::{ServiceError, poll};

#[retry(max_attempts = 3, wait = "0")]
#[bulkhead(max_concurrent = 2)]
fn fetch(script: &Script) -> Result<u32, ServiceError> {
    let n = script_run(script)?;
    Ok(n * 10)
}

/// A helper the bodies call, to use `?` in them.
fn script_run(script: &Script) -> Result<u32, ServiceError> {
    crate::composition::Composed::ordered(&crate::composition::Runner, script)
}

#[test]
fn a_function_with_retry_runs_its_body_again_until_it_succeeds() {
    const ID: &str = "macros::policy_functions::fetch(&Script)";
    let script = Script::failing(2, "flaky");
    assert_eq!(fetch(&script).unwrap(), 30);
    assert_eq!(script.calls(), 3);
    let registry = Registry::global();
    assert_eq!(registry.retry(ID).unwrap().snapshot().max_attempts, 3);
    assert_eq!(registry.bulkhead(ID).unwrap().max_concurrent(), 2);
    assert_eq!(registry.bulkhead(ID).unwrap().concurrent_calls(), 0);
}

#[retry(max_attempts = 3, wait = "0")]
fn each_attempt_gets_fresh_arguments(
    mut seen: Vec<u32>,
    script: &Script,
) -> Result<usize, ServiceError> {
    seen.push(script.calls());
    script_run(script)?;
    Ok(seen.len())
}

#[test]
fn each_attempt_binds_the_parameters_to_its_own_clones() {
    let script = Script::failing(2, "flaky");
    assert_eq!(
        each_attempt_gets_fresh_arguments(vec![7], &script).unwrap(),
        2,
        "the third attempt saw the original vector, not one pushed to twice"
    );
}

#[timeout(duration = "5s")]
#[retry(max_attempts = 2, wait = "0")]
async fn fetch_async(script: &Script) -> Result<u32, ServiceError> {
    let n = script_run(script)?;
    Ok(n + 100)
}

#[test]
fn an_async_function_with_retry_makes_a_new_future_per_attempt() {
    const ID: &str = "macros::policy_functions::fetch_async(&Script)";
    let script = Script::failing(1, "flaky");
    let call = pin!(fetch_async(&script));
    assert!(matches!(poll(call), Poll::Ready(Ok(102))));
    assert_eq!(script.calls(), 2);
    let timeout = Registry::global().timeout(ID).unwrap();
    assert_eq!(timeout.snapshot().duration, Duration::from_secs(5));
}

#[circuit_breaker(minimum_calls = 2, sliding_window_size = 2)]
fn tripping(script: &Script) -> Result<u32, ServiceError> {
    script_run(script)
}

#[test]
fn a_functions_breaker_opens_and_then_refuses_to_run_the_body() {
    const ID: &str = "macros::policy_functions::tripping(&Script)";
    let down = Script::failing(u32::MAX, "down");
    assert!(tripping(&down).is_err() && tripping(&down).is_err());
    let breaker = Registry::global().circuit_breaker(ID).unwrap();
    assert_eq!(breaker.state(), CircuitState::Open);
    match tripping(&down) {
        Err(ServiceError::Rejected(r)) => assert_eq!(r.kind(), RejectionKind::CircuitOpen),
        other => panic!("expected the open breaker, got {other:?}"),
    }
    assert_eq!(down.calls(), 2);
}

#[rate_limiter(limit_for_period = 1, refresh_period = "1h", max_wait = "0")]
fn metered(script: &Script) -> impl Future<Output = Result<u32, ServiceError>> + use<'_> {
    let first = script.calls();
    async move { Ok(first) }
}

#[test]
fn a_function_returning_a_future_runs_it_under_its_policies() {
    let script = Script::ok();
    assert!(matches!(poll(pin!(metered(&script))), Poll::Ready(Ok(0))));
    match poll(pin!(metered(&script))) {
        Poll::Ready(Err(ServiceError::Rejected(r))) => {
            assert_eq!(r.kind(), RejectionKind::RateLimited);
        }
        other => panic!("one permit per hour: {other:?}"),
    }
}

#[derive(Debug)]
struct Renderer(u32);

impl Renderer {
    #[retry(max_attempts = 2, wait = "0")]
    fn render(&self, script: &Script) -> Result<u32, ServiceError> {
        script_run(script).map(|n| n + self.0)
    }

    #[retry(max_attempts = 2, wait = "0")]
    async fn render_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script_run(script).map(|n| n + self.0)
    }

    #[retry(max_attempts = 2, wait = "0")]
    #[timeout]
    fn count(&mut self, script: &Script) -> Result<u32, ServiceError> {
        self.0 += 1;
        script_run(script).map(|_| self.0)
    }
}

#[test]
fn methods_with_a_body_are_retried_with_their_receiver() {
    const ID: &str = "macros::policy_functions::Renderer::render(&Script)";
    let mut renderer = Renderer(10);
    assert_eq!(renderer.render(&Script::failing(1, "flaky")).unwrap(), 12);
    assert!(Registry::global().retry(ID).is_ok());
    let flaky = Script::failing(1, "flaky");
    assert!(matches!(
        poll(pin!(renderer.render_async(&flaky))),
        Poll::Ready(Ok(12))
    ));
    assert_eq!(
        renderer.count(&Script::failing(1, "flaky")).unwrap(),
        12,
        "`&mut self` is borrowed again by each attempt"
    );
}

#[retry(config = "no-such-retry-config")]
fn unconfigured_retry() -> Result<u8, ServiceError> {
    Ok(1)
}

#[test]
fn an_unresolvable_function_still_runs_on_its_own_policies_and_keeps_the_error() {
    const ID: &str = "macros::policy_functions::unconfigured_retry()";
    assert_eq!(unconfigured_retry().unwrap(), 1);
    let errors = function_policy_errors();
    assert!(
        errors
            .iter()
            .any(|e| e.code() == "REG-004" && e.to_string().contains("no-such-retry-config")),
        "{errors:?}"
    );
    assert_eq!(Registry::global().retry(ID).unwrap_err().code(), "REG-009");
}
