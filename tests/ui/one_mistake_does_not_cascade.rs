// A bad attribute is reported alone: the trait and its wrapper still exist,
// so the code using them raises no further errors.
use bulkhead::{Rejection, Registry, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Thumbnails {
    #[bulkhead(max_wait = "1 fortnight")]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

struct Backend;

impl Thumbnails for Backend {
    fn thumbnail(&self, _: &str) -> Result<Vec<u8>, Error> {
        Ok(Vec::new())
    }
}

fn main() {
    let registry = Registry::new();
    let service = ResilientThumbnails::new(Backend, &registry).unwrap();
    let _ = service.thumbnail("a");
}
