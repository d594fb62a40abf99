// A method's error type that does not implement `bulkhead::retry::Pushback`
// compiles as before, and the retry's own backoff alone applies.
#![allow(async_fn_in_trait)]
use std::cell::Cell;
use std::rc::Rc;

use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Service {
    #[retry(max_attempts = 3, wait = "0", max_wait_interval = "1s")]
    fn call(&self) -> Result<(), Error>;

    #[retry(max_attempts = 3, wait = "0", max_wait_interval = "1s")]
    async fn call_async(&self) -> Result<(), Error>;
}

struct Failing {
    attempts: Rc<Cell<u32>>,
}

impl Service for Failing {
    fn call(&self) -> Result<(), Error> {
        self.attempts.set(self.attempts.get() + 1);
        Err(Error)
    }
    async fn call_async(&self) -> Result<(), Error> {
        self.call()
    }
}

fn main() {
    let registry = Registry::new();
    let made = Rc::new(Cell::new(0));
    let service = ResilientService::new(Failing { attempts: Rc::clone(&made) }, &registry).unwrap();
    assert!(service.call().is_err());
    assert_eq!(made.replace(0), 3);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert!(runtime.block_on(service.call_async()).is_err());
    assert_eq!(made.get(), 3);
}
