//! The events of one policy instance: [`InstanceEvents`], a filter over the
//! registry's [`EventStream`].

use std::fmt;
use std::marker::PhantomData;

use bulkhead_core::{Event, EventStream};

/// The events of one policy instance, from a handle's `subscribe()` (for
/// example [`BulkheadHandle::subscribe`](crate::BulkheadHandle::subscribe)).
///
/// A filter over a subscription to every event of the registry
/// ([`Registry::subscribe`](crate::Registry::subscribe)): it keeps the events
/// of type `E` whose instance id is this one's and drops the others. `E` is
/// one policy's event type ([`Policy::Event`](crate::Policy::Event):
/// [`BulkheadEvent`](bulkhead_core::BulkheadEvent), ...), or
/// [`Event`] for the events of every policy sharing the id (the policies of a
/// [`Pipeline`](crate::Pipeline) share its id).
///
/// Like every subscription it never slows a caller down: it reads from a
/// bounded buffer of its own, and one that falls more than the registry's
/// `event_capacity` behind loses the oldest events
/// ([`missed`](Self::missed)). Admitted calls publish nothing. Dropping it
/// unsubscribes.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{BulkheadEvent, BulkheadEventKind};
/// use bulkhead_registry::{InstanceEvents, Pipeline, Registry};
///
/// let registry = Registry::new();
/// let reports = Pipeline::builder(&registry, "reports")
///     .bulkhead(|b| b.max_concurrent(1))
///     .build()?;
/// let mut events = InstanceEvents::<BulkheadEvent>::new(registry.subscribe(), "reports");
///
/// // A call made while the only slot is taken is rejected.
/// let handle = registry.bulkhead("reports")?;
/// let slot = handle.bulkhead().try_enter();
/// assert!(reports.execute(|| Ok::<_, std::io::Error>(())).is_err());
/// drop(slot);
///
/// let event = events.try_recv().expect("one rejection");
/// assert_eq!(event.instance, "reports");
/// assert!(matches!(event.kind, BulkheadEventKind::Rejected { max_concurrent: 1, .. }));
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
pub struct InstanceEvents<E = Event> {
    stream: EventStream,
    instance: Box<str>,
    kind: PhantomData<fn() -> E>,
}

impl<E: PolicyEvent> InstanceEvents<E> {
    /// Keeps the events of `stream` that are of type `E` and about
    /// `instance`.
    pub fn new(stream: EventStream, instance: impl Into<Box<str>>) -> Self {
        InstanceEvents {
            stream,
            instance: instance.into(),
            kind: PhantomData,
        }
    }

    /// The instance id whose events this keeps.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Waits for this instance's next event. `None` once the registry and
    /// every policy it made are gone and every event was read.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future before it completes loses no event
    /// of this instance.
    pub async fn recv(&mut self) -> Option<E> {
        loop {
            let event = self.stream.recv().await?;
            if let Some(event) = self.keep(event) {
                return Some(event);
            }
        }
    }

    /// This instance's next event if one is ready, without waiting.
    pub fn try_recv(&mut self) -> Option<E> {
        loop {
            let event = self.stream.try_recv()?;
            if let Some(event) = self.keep(event) {
                return Some(event);
            }
        }
    }

    /// Every event of this instance ready now, without waiting.
    pub fn drain(&mut self) -> impl Iterator<Item = E> + '_ {
        std::iter::from_fn(|| self.try_recv())
    }

    /// How many events of the registry this subscription lost by falling
    /// more than the registry's `event_capacity` behind; some of them may
    /// have been about other instances.
    pub fn missed(&self) -> u64 {
        self.stream.missed()
    }

    fn keep(&self, event: Event) -> Option<E> {
        if event.instance() == &*self.instance {
            E::from_event(event)
        } else {
            None
        }
    }
}

impl<E> fmt::Debug for InstanceEvents<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstanceEvents")
            .field("instance", &self.instance)
            .field("kind", &std::any::type_name::<E>())
            .field("stream", &self.stream)
            .finish()
    }
}

/// An event type [`InstanceEvents`] can keep: one policy's events
/// ([`Policy::Event`](crate::Policy::Event):
/// [`BulkheadEvent`](bulkhead_core::BulkheadEvent),
/// [`RetryEvent`](bulkhead_core::RetryEvent), ...) or any policy's
/// ([`Event`]).
///
/// Sealed: implemented for those types only.
pub trait PolicyEvent: Sized + sealed::Sealed {
    /// `event` as this type, if it is one.
    fn from_event(event: Event) -> Option<Self>;
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for Event {}
impl PolicyEvent for Event {
    fn from_event(event: Event) -> Option<Self> {
        Some(event)
    }
}

/// `$ty`, the events of `Event::$variant`, as a [`PolicyEvent`].
macro_rules! policy_event {
    ($ty:ident => $variant:ident) => {
        impl crate::events::sealed::Sealed for $ty {}

        impl crate::events::PolicyEvent for $ty {
            fn from_event(event: bulkhead_core::Event) -> Option<Self> {
                match event {
                    bulkhead_core::Event::$variant(event) => Some(event),
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use policy_event;

#[cfg(test)]
mod tests {
    use bulkhead_core::{BulkheadEvent, CircuitBreakerEvent};

    use super::*;

    #[test]
    fn bounds() {
        fn send_sync<T: Send + Sync + Unpin>() {}
        send_sync::<InstanceEvents<Event>>();
        send_sync::<InstanceEvents<BulkheadEvent>>();
        send_sync::<InstanceEvents<CircuitBreakerEvent>>();
    }
}
