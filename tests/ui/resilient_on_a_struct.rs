use bulkhead::resilient;

#[resilient]
pub struct Thumbnails;

fn main() {}
