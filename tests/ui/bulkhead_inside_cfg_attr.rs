// `#[resilient]` cannot apply a policy written inside `#[cfg_attr]`: it
// says to write `#[bulkhead]` directly.
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Fetch {
    #[cfg_attr(unix, bulkhead(max_concurrent = 2))]
    fn fetch(&self) -> Result<u8, Rejection>;
}

fn main() {}
