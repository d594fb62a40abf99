// `#[retry]` on a function with a body: its body runs once per attempt,
// with its own clone of every argument; an argument that is not `Clone` is
// ATR-012, over its type.
use bulkhead::{Rejection, retry};

pub struct Upload {
    pub bytes: Vec<u8>,
}

#[retry(max_attempts = 2)]
pub fn store(id: &str, upload: Upload) -> Result<usize, Rejection> {
    Ok(id.len() + upload.bytes.len())
}

fn main() {}
