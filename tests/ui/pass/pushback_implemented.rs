// A method's error type that implements `bulkhead::retry::Pushback` is read
// by the retry without anything more written: a wait asked for beyond
// `max_wait_interval` gives up after the first attempt, a short one is
// waited and retried; sync and async, on a trait and on a function.
#![allow(async_fn_in_trait)]
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use bulkhead::{Registry, Rejection, resilient, retry};

#[derive(Debug)]
pub enum Error {
    Busy(Duration),
    Rejected,
}

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error::Rejected
    }
}

impl retry::Pushback for Error {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Busy(wait) => Some(*wait),
            Error::Rejected => None,
        }
    }
}

#[resilient]
pub trait Service {
    #[retry(max_attempts = 3, wait = "0", max_wait_interval = "1s")]
    fn call(&self, wait: Duration) -> Result<(), Error>;

    #[retry(max_attempts = 3, wait = "0", max_wait_interval = "1s")]
    async fn call_async(&self, wait: Duration) -> Result<(), Error>;
}

struct Busy {
    attempts: Rc<Cell<u32>>,
}

impl Service for Busy {
    fn call(&self, wait: Duration) -> Result<(), Error> {
        self.attempts.set(self.attempts.get() + 1);
        Err(Error::Busy(wait))
    }
    async fn call_async(&self, wait: Duration) -> Result<(), Error> {
        self.call(wait)
    }
}

thread_local! {
    static CALLS: Cell<u32> = const { Cell::new(0) };
}

#[retry(max_attempts = 3, wait = "0", max_wait_interval = "1s")]
fn throttled() -> Result<(), Error> {
    CALLS.with(|calls| calls.set(calls.get() + 1));
    Err(Error::Busy(Duration::from_secs(60)))
}

fn main() {
    let registry = Registry::new();
    let made = Rc::new(Cell::new(0));
    let service = ResilientService::new(Busy { attempts: Rc::clone(&made) }, &registry).unwrap();
    let attempts = |_: &_| made.replace(0);

    assert!(service.call(Duration::from_secs(60)).is_err());
    assert_eq!(attempts(&service), 1, "a minute is past max_wait_interval: given up");
    assert!(service.call(Duration::from_millis(1)).is_err());
    assert_eq!(attempts(&service), 3, "a millisecond is waited, then retried");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    assert!(runtime.block_on(service.call_async(Duration::from_secs(60))).is_err());
    assert_eq!(attempts(&service), 1);
    assert!(runtime.block_on(service.call_async(Duration::from_millis(1))).is_err());
    assert_eq!(attempts(&service), 3);

    assert!(throttled().is_err());
    assert_eq!(CALLS.with(Cell::get), 1);
}
