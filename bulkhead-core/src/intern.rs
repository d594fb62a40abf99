//! Instance ids as `&'static str`, so that rejections and events can name
//! their instance without allocating or touching a reference count.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Returns a `'static` copy of `id`, shared by every caller with the same id.
///
/// Each distinct id is stored once for the life of the process (ids name
/// policies declared in code or configuration, a small and bounded set);
/// creating the same instance again, in this or another registry, reuses it.
pub(crate) fn intern(id: &str) -> &'static str {
    static IDS: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut ids = IDS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match ids.get(id) {
        Some(interned) => interned,
        None => {
            let interned: &'static str = Box::leak(id.into());
            ids.insert(interned);
            interned
        }
    }
}

#[cfg(test)]
mod tests {
    use super::intern;

    #[test]
    fn the_same_id_is_stored_once() {
        let a = intern("intern-test");
        let b = intern(&String::from("intern-test"));
        assert!(std::ptr::eq(a, b));
        assert_ne!(intern("intern-test-2").as_ptr(), a.as_ptr());
    }
}
