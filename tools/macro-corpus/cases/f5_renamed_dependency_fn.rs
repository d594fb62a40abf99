// expect: pass
// dependency: bh = { package = "bulkhead", path = "ROOT" }

#[derive(Debug)]
pub struct E2;
impl From<bh::Rejection> for E2 {
    fn from(_: bh::Rejection) -> Self { E2 }
}

#[bh::retry(max_attempts = 2)]
#[bh::bulkhead]
pub fn call(x: u8) -> Result<u8, E2> {
    Ok(x)
}

#[bh::bulkhead(max_concurrent = 2)]
pub async fn alone(x: u8) -> Result<u8, E2> {
    Ok(x)
}
