// With #[hedge] each attempt gets a clone of every argument: an argument
// that is not `Clone` is ATR-012, over its type, naming #[hedge].
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Query {
    pub text: String,
}

#[resilient]
pub trait Search: Sync {
    #[hedge(delay = "50ms")]
    async fn find(&self, query: Query) -> Result<String, Error>;
}

fn main() {}
