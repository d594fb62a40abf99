// `#[fallback]` on a function with a body, below the attribute that
// expands first: ATR-013 over the whole `#[fallback(..)]` attribute.
use bulkhead::Rejection;

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[bulkhead::bulkhead]
#[bulkhead::fallback(method = "cached")]
async fn fetch(id: &str) -> Result<Vec<u8>, Error> {
    Ok(id.as_bytes().to_vec())
}

fn main() {}
