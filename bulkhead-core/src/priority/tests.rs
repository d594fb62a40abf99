//! The class byte: nesting, strengths, restoring, following a future.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use super::*;

fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn with_nests_and_restores_what_was_there() {
    assert_eq!(current(), None);
    with(Priority::High, || {
        assert_eq!(current(), Some(Priority::High));
        with(Priority::Sheddable, || {
            assert_eq!(current(), Some(Priority::Sheddable));
        });
        assert_eq!(current(), Some(Priority::High));
    });
    assert_eq!((current(), raw()), (None, 0));
}

#[test]
fn a_panic_inside_restores_the_class() {
    with(Priority::High, || {
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            with(Priority::Critical, || panic!("inside"));
        }));
        assert!(panicked.is_err());
        assert_eq!(current(), Some(Priority::High));
        let mut future = pin!(scope(Priority::Sheddable, async { panic!("polled") }));
        let panicked = catch_unwind(AssertUnwindSafe(|| poll_once(future.as_mut())));
        assert!(panicked.is_err());
        assert_eq!(current(), Some(Priority::High));
    });
    assert_eq!(current(), None);
}

#[test]
fn a_scope_sets_its_class_for_each_poll_only() {
    let mut ready = false;
    let mut future = pin!(scope(
        Priority::Critical,
        std::future::poll_fn(|_| {
            assert_eq!(current(), Some(Priority::Critical));
            if std::mem::replace(&mut ready, true) {
                Poll::Ready(current())
            } else {
                Poll::Pending
            }
        })
    ));
    assert_eq!(poll_once(future.as_mut()), Poll::Pending);
    assert_eq!(current(), None, "restored between polls");
    let seen = with(Priority::Sheddable, || poll_once(future.as_mut()));
    assert_eq!(
        seen,
        Poll::Ready(Some(Priority::Critical)),
        "the inner scope wins"
    );
}

#[test]
fn a_weak_scope_loses_to_a_strong_one_around_it_and_to_the_bulkhead() {
    let inner = |class| scope_weak(class, async { (current(), raw()) });
    let mut future = pin!(inner(Priority::Sheddable));
    let Poll::Ready((alone, byte)) = poll_once(future.as_mut()) else {
        panic!("ready");
    };
    assert_eq!(alone, Some(Priority::Sheddable));
    assert_eq!(resolve(byte, None), Priority::Sheddable);
    assert_eq!(resolve(byte, Some(Priority::High)), Priority::High);
    let mut future = pin!(inner(Priority::Sheddable));
    let Poll::Ready((seen, byte)) = with(Priority::Critical, || poll_once(future.as_mut())) else {
        panic!("ready");
    };
    assert_eq!(seen, Some(Priority::Critical));
    // A scope beats the bulkhead's own class; nothing set is Normal.
    assert_eq!(resolve(byte, Some(Priority::Sheddable)), Priority::Critical);
    assert_eq!(resolve(0, None), Priority::Normal);
    assert_eq!(resolve(0, Some(Priority::High)), Priority::High);
}

#[test]
fn bounds() {
    fn send<T: Send>(_: &T) {}
    let future = scope(Priority::High, async {});
    send(&future);
    assert_eq!(future.class(), Priority::High);
    assert!(format!("{future:?}").contains("High"));
}
