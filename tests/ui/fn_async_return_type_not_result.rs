// An async function that does not return a `Result` is reported once,
// with its code, at its return type.
use bulkhead::bulkhead;

#[bulkhead(max_concurrent = 2)]
async fn render(id: &str) -> String {
    id.to_owned()
}

fn main() {
    let _ = render("a");
}
