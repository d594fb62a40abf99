use bulkhead::Rejection;

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[bulkhead::bulkhead(per_key = 4, key = user)]
pub fn render(tenant: &str, width: u32) -> Result<(), Error> {
    let _ = (tenant, width);
    Ok(())
}

fn main() {}
