use bulkhead::{Rejection, bulkhead};

#[bulkhead(max_concurrent = -1)]
fn render(id: &str) -> Result<String, Rejection> {
    Ok(id.to_owned())
}

fn main() {
    let _ = render("a");
}
