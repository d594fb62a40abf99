//! The fallback policy: when a call ends in a way it covers (the rejections
//! listed in `on`, and the method's own errors if `on_error`), another
//! method answers instead.
//!
//! [`Fallback`] decides, and says so with an event; the other method is
//! the caller's to call: a `#[resilient]` wrapper calls the delegate's
//! method that `#[fallback(method = "..")]` names, with the same arguments,
//! outside every policy of the method. The fallback is the outermost
//! policy: it sees the call's last outcome, after every retry and hedge.
//!
//! - `config.rs`: [`FallbackConfig`] and its builder.

mod config;

pub use config::{FallbackConfig, FallbackConfigBuilder};

use std::fmt;
use std::sync::Arc;

use crate::context::{PolicyContext, policy_getters};
use crate::events::{Event, FallbackEvent, FallbackEventKind};
use crate::intern::intern;
use crate::rejection::CallError;

/// A fallback policy: which outcomes of a call another method answers.
///
/// Cheap to clone; clones share one configuration.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{BulkheadFull, CallError, Fallback, FallbackConfig, Rejection, RejectionKind};
///
/// let config = FallbackConfig::builder().on([RejectionKind::BulkheadFull]).build()?;
/// let fallback = Fallback::new("thumbnails", config);
///
/// let full: Result<u8, CallError<&str>> =
///     Err(Rejection::from(BulkheadFull::new("thumbnails")).into());
/// let thumbnail = if fallback.answers(&full) { Ok(0) } else { full };
/// assert!(matches!(thumbnail, Ok(0)));
///
/// let failed: Result<u8, CallError<&str>> = Err(CallError::Inner("corrupt image"));
/// assert!(!fallback.answers(&failed)); // not `on_error`
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Fallback {
    shared: Arc<Shared>,
}

struct Shared {
    instance: &'static str,
    config: FallbackConfig,
    context: PolicyContext,
}

impl Fallback {
    /// A fallback that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process. Ids are meant to name the dependencies of a program, a
    /// bounded set; do not build one per request.
    pub fn new(instance: &str, config: FallbackConfig) -> Self {
        Fallback::with_context(instance, config, PolicyContext::default())
    }

    /// A fallback publishing its events to the context's bus.
    pub fn with_context(instance: &str, config: FallbackConfig, context: PolicyContext) -> Self {
        Fallback {
            shared: Arc::new(Shared {
                instance: intern(instance),
                config,
                context,
            }),
        }
    }

    /// Whether the fallback answers instead of a call that ended with
    /// `result`: a rejection listed in `on`, or the call's own error if
    /// `on_error`. Publishes `Used` when it does. An `Ok` is never covered.
    #[inline]
    pub fn answers<T, E>(&self, result: &Result<T, CallError<E>>) -> bool {
        let config = &self.shared.config;
        let rejection = match result {
            Ok(_) => return false,
            Err(CallError::Inner(_)) if config.on_error() => None,
            Err(CallError::Inner(_)) => return false,
            Err(CallError::Rejected(rejection)) if config.on().contains(rejection.kind()) => {
                Some(rejection.kind())
            }
            Err(CallError::Rejected(_)) => return false,
        };
        self.used(rejection);
        true
    }

    #[cold]
    fn used(&self, rejection: Option<crate::rejection::RejectionKind>) {
        let instance = self.shared.instance;
        let kind = FallbackEventKind::Used { rejection };
        self.shared
            .context
            .publish(|at| Event::Fallback(FallbackEvent::new(instance, kind, at)));
    }
}

policy_getters!(Fallback: FallbackConfig, Debug);

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::events::EventBus;
    use crate::rejection::{BulkheadFull, CallTimeout, CircuitOpen, Rejection, RejectionKind};

    fn rejected(rejection: impl Into<Rejection>) -> Result<(), CallError<&'static str>> {
        Err(CallError::Rejected(rejection.into()))
    }

    #[test]
    fn on_lists_the_rejections_it_covers_and_on_error_adds_the_errors() {
        let bus = EventBus::default();
        let mut events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(ManualClock::new())).with_events(bus);
        let config = FallbackConfig::builder()
            .on([RejectionKind::CircuitOpen])
            .build()
            .unwrap();
        let fallback = Fallback::with_context("fallback-on", config, context.clone());
        assert!(fallback.answers(&rejected(CircuitOpen::new("b"))));
        assert!(!fallback.answers(&rejected(BulkheadFull::new("b"))));
        assert!(!fallback.answers(&Err::<(), _>(CallError::Inner("boom"))));
        assert!(!fallback.answers(&Ok::<_, CallError<()>>(())));

        let config = FallbackConfig::builder().on_error(true).build().unwrap();
        let lenient = Fallback::with_context("fallback-error", config, context);
        assert!(lenient.answers(&Err::<(), _>(CallError::Inner("boom"))));
        assert!(
            lenient.answers(&rejected(CallTimeout::new("t"))),
            "every kind by default"
        );

        let used: Vec<(&str, FallbackEventKind)> = events
            .drain()
            .map(|event| match event {
                Event::Fallback(event) => (event.instance, event.kind),
                other => panic!("not a fallback event: {other:?}"),
            })
            .collect();
        assert_eq!(
            used,
            [
                (
                    "fallback-on",
                    FallbackEventKind::Used {
                        rejection: Some(RejectionKind::CircuitOpen)
                    }
                ),
                (
                    "fallback-error",
                    FallbackEventKind::Used { rejection: None }
                ),
                (
                    "fallback-error",
                    FallbackEventKind::Used {
                        rejection: Some(RejectionKind::Timeout)
                    }
                ),
            ]
        );
    }

    #[test]
    fn policies_are_send_sync_and_cheap_to_clone() {
        fn bounds<T: Send + Sync + Clone + 'static>() {}
        bounds::<Fallback>();
        bounds::<FallbackConfig>();
    }
}
