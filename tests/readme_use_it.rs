//! The README's "Use it" example, compiled as a user writes it: its lines
//! appear below (kept as the README has them, unformatted) in a function
//! that returns `Box<dyn Error>`, with a backend, so that each of its `?`s
//! must compile; a test checks that the README still shows these lines.

#[rustfmt::skip]
#[allow(dead_code, unreachable_pub)] // the example's items, as the README shows them
mod readme {
use std::error::Error;

use bulkhead::{resilient, Registry, Rejection};

#[derive(Debug)]
pub enum ThumbError { Busy(Rejection), Backend(String) }
impl From<Rejection> for ThumbError { fn from(r: Rejection) -> Self { ThumbError::Busy(r) } }
impl std::fmt::Display for ThumbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { write!(f, "{self:?}") }
}
impl std::error::Error for ThumbError {} // so that `?` takes it into Box<dyn Error>

#[resilient]
pub trait ThumbnailService: Send + Sync {
    #[bulkhead(name = "thumbnails", max_concurrent = 4, max_wait = "250ms")]
    fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, ThumbError>;

    #[bulkhead(name = "thumbnails-async", max_concurrent = 2, max_wait = "1s")]
    async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, ThumbError>;

    fn name(&self) -> String; // not annotated: plain delegation
}

pub struct Backend;

impl ThumbnailService for Backend {
    fn thumbnail(&self, image_id: &str) -> Result<Vec<u8>, ThumbError> {
        if image_id.is_empty() {
            return Err(ThumbError::Backend("no id".into()));
        }
        Ok(image_id.as_bytes().to_vec())
    }

    async fn thumbnail_async(&self, image_id: &str) -> Result<Vec<u8>, ThumbError> {
        self.thumbnail(image_id)
    }

    fn name(&self) -> String {
        "backend".into()
    }
}

pub fn use_it() -> Result<Vec<u8>, Box<dyn Error>> {
    let backend = Backend;
let registry = Registry::new();
let service = ResilientThumbnailService::new(backend, &registry)?; // conflicts fail here
let bytes = service.thumbnail("cat")?;
println!("{:?}", registry.bulkhead("thumbnails")?.snapshot());
    assert_eq!(service.name(), "backend");
    Ok(bytes)
}
}

#[test]
fn the_example_runs() {
    assert_eq!(readme::use_it().unwrap(), b"cat");
}

#[test]
fn the_readme_shows_these_lines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let here = std::fs::read_to_string(root.join("tests/readme_use_it.rs")).unwrap();
    let section = readme.split("## Use it").nth(1).expect("a Use it section");
    let block = section
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a rust block");
    for line in block.lines().filter(|line| !line.trim().is_empty()) {
        assert!(
            here.lines().any(|ours| ours == line),
            "the README's line is not compiled here: {line:?}"
        );
    }
}
