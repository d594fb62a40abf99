// `#[hedge]` on a sync function with a body: ATR-014, over its signature.
use bulkhead::Rejection;

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[bulkhead::hedge(delay = "50ms")]
fn find(query: &str) -> Result<String, Error> {
    Ok(query.to_owned())
}

fn main() {}
