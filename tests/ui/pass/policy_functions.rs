// Policy attributes on functions with a body, in any order, with `?` in
// the body, patterns as parameters, generic functions, and methods taking
// `&self` and `&mut self`; each attribute's import is used.
use std::future::Future;

use bulkhead::{Rejection, bulkhead, circuit_breaker, rate_limiter, retry, timeout};

#[derive(Debug)]
pub enum Error {
    Rejected(Rejection),
    Parse,
}

impl From<Rejection> for Error {
    fn from(r: Rejection) -> Self {
        Error::Rejected(r)
    }
}

#[bulkhead(max_concurrent = 2)]
#[retry(max_attempts = 2, wait = "0")]
#[circuit_breaker]
#[timeout(duration = "1s")]
#[rate_limiter(limit_for_period = 100)]
pub fn parse(text: &str, (lo, hi): (u32, u32)) -> Result<u32, Error> {
    let value: u32 = text.parse().map_err(|_| Error::Parse)?;
    Ok(value.clamp(lo, hi))
}

#[retry(wait = "0")]
pub async fn parse_async<T: std::str::FromStr + Clone>(text: String, fallback: T) -> Result<T, Error> {
    if text.is_empty() {
        return Ok(fallback);
    }
    text.parse().map_err(|_| Error::Parse)
}

#[timeout(duration = "1s")]
pub fn later(text: String) -> impl Future<Output = Result<usize, Error>> + Send {
    async move { Ok(text.len()) }
}

pub struct Parser {
    parsed: u32,
}

impl Parser {
    #[retry(wait = "0")]
    pub fn parse(&mut self, mut text: String) -> Result<u32, Error> {
        text.retain(|c| c.is_ascii_digit());
        self.parsed += 1;
        text.parse().map_err(|_| Error::Parse)
    }

    #[circuit_breaker]
    pub async fn count(&self) -> Result<u32, Error> {
        Ok(self.parsed)
    }
}

fn main() {
    assert_eq!(parse("7", (1, 5)).unwrap(), 5);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(runtime.block_on(parse_async(String::new(), 3u8)).unwrap(), 3);
    assert_eq!(runtime.block_on(later("ab".into())).unwrap(), 2);
    let mut parser = Parser { parsed: 0 };
    assert_eq!(parser.parse("a1".into()).unwrap(), 1);
    assert_eq!(runtime.block_on(parser.count()).unwrap(), 1);
}
