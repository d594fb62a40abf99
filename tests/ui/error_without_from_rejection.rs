use bulkhead::resilient;

#[derive(Debug)]
pub struct Error;

#[resilient]
pub trait Thumbnails {
    #[bulkhead(max_concurrent = 4)]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
