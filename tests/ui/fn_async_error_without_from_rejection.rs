// An async function whose error type lacks `From<Rejection>` is reported
// once, with its code, at its return type.
use bulkhead::bulkhead;

#[derive(Debug)]
pub struct Error;

#[bulkhead(max_concurrent = 2)]
async fn render(id: &str) -> Result<String, Error> {
    Ok(id.to_owned())
}

fn main() {
    let _ = render("a");
}
