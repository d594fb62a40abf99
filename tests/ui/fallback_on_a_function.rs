// `#[fallback]` on a function with a body, which has no delegate: ATR-013.
use bulkhead::Rejection;

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[bulkhead::fallback(method = "cached")]
#[bulkhead::bulkhead]
fn fetch(id: &str) -> Result<Vec<u8>, Error> {
    Ok(id.as_bytes().to_vec())
}

fn main() {}
