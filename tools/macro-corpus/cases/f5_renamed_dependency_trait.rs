// expect: pass
// dependency: bh = { package = "bulkhead", path = "ROOT" }
#![allow(async_fn_in_trait)]

#[derive(Debug)]
pub struct E2;
impl From<bh::Rejection> for E2 {
    fn from(_: bh::Rejection) -> Self { E2 }
}

#[bh::resilient]
pub trait Svc {
    #[bh::bulkhead(max_concurrent = 2)]
    fn call(&self) -> Result<u8, E2>;
    #[retry]
    #[timeout(duration = "1s")]
    async fn composed(&self, x: u8) -> Result<u8, E2>;
}
