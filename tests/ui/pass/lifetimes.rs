// Lifetimes on the trait, on methods, elided in arguments and results,
// and a generic associated type.
#![allow(async_fn_in_trait)]
use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Parser<'src> {
    type Tokens<'a>: Iterator<Item = &'a str>
    where
        Self: 'a;

    #[bulkhead(max_concurrent = 1)]
    fn first_word(&self, text: &'src str) -> Result<&'src str, Error>;

    #[bulkhead]
    fn longest<'a>(&self, a: &'a str, b: &'a str) -> Result<&'a str, Error>;

    #[bulkhead]
    fn name(&self) -> Result<&str, Error>;

    #[bulkhead]
    async fn trim<'a>(&self, text: &'a str) -> Result<&'a str, Error>;

    fn tokens(&self) -> Self::Tokens<'_>;
}

struct Words(String);

impl<'src> Parser<'src> for Words {
    type Tokens<'a> = std::str::SplitWhitespace<'a>;

    fn first_word(&self, text: &'src str) -> Result<&'src str, Error> {
        text.split_whitespace().next().ok_or(Error)
    }
    fn longest<'a>(&self, a: &'a str, b: &'a str) -> Result<&'a str, Error> {
        Ok(if a.len() >= b.len() { a } else { b })
    }
    fn name(&self) -> Result<&str, Error> {
        Ok(&self.0)
    }
    async fn trim<'a>(&self, text: &'a str) -> Result<&'a str, Error> {
        Ok(text.trim())
    }
    fn tokens(&self) -> Self::Tokens<'_> {
        self.0.split_whitespace()
    }
}

fn main() {
    let registry = Registry::new();
    let parser = ResilientParser::new(Words("a b".into()), &registry).unwrap();
    let text = String::from("hello world");
    let word = parser.first_word(&text).unwrap();
    let longest = parser.longest(word, "x").unwrap();
    let _ = (longest, parser.name().unwrap(), parser.tokens().count());
    let _future = parser.trim(&text);
}
