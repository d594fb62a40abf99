//! `#[bulkhead]` on functions with a body: each function keeps its bulkhead
//! in a `static`, resolved from [`Registry::global`] on its first call.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Mutex, OnceLock, PoisonError};

use bulkhead_core::{Bulkhead, BulkheadConfigBuilder};
use bulkhead_registry::{Registry, RegistryError};

/// What a function's `#[bulkhead]` declares, made only on its first call.
#[doc(hidden)]
#[derive(Debug)]
pub struct FnDecl {
    name: Option<&'static str>,
    source: String,
    spec: BulkheadConfigBuilder,
}

impl FnDecl {
    /// The declaration of the function `source` (its instance id unless
    /// `name` is given), with the attribute's explicit values in `spec`.
    pub fn new(name: Option<&'static str>, source: String, spec: BulkheadConfigBuilder) -> Self {
        FnDecl { name, source, spec }
    }

    fn resolve(self, registry: &Registry) -> Bulkhead {
        let id: Cow<'_, str> = match self.name {
            Some(name) => name.into(),
            None => self.source.as_str().into(),
        };
        match registry.bulkhead_policy(&id, &self.source, &self.spec) {
            Ok(bulkhead) => bulkhead,
            Err(error) => {
                errors().push(error);
                // The attribute's own values were checked at compile time,
                // so building them on the defaults cannot fail.
                let config = self.spec.build().unwrap_or_default();
                Bulkhead::new(&id, config)
            }
        }
    }
}

/// The bulkhead of one function, in a `static` the macro declares in it.
#[doc(hidden)]
pub struct FnPolicy {
    bulkhead: OnceLock<Bulkhead>,
}

impl FnPolicy {
    /// Not resolved yet.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        FnPolicy {
            bulkhead: OnceLock::new(),
        }
    }

    /// The bulkhead, resolving `declare()` on the first call.
    #[inline]
    pub fn get(&'static self, declare: impl FnOnce() -> FnDecl) -> &'static Bulkhead {
        match self.bulkhead.get() {
            Some(bulkhead) => bulkhead,
            None => self.init(declare),
        }
    }

    #[cold]
    #[inline(never)]
    fn init(&'static self, declare: impl FnOnce() -> FnDecl) -> &'static Bulkhead {
        self.bulkhead
            .get_or_init(|| declare().resolve(Registry::global()))
    }
}

impl fmt::Debug for FnPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnPolicy")
            .field("bulkhead", &self.bulkhead.get())
            .finish()
    }
}

/// `<module>::<SelfType>::<method>`: the source (and default instance id) of
/// a method with a body, `self_type` being `type_name::<Self>()` without its
/// path and generic arguments.
#[doc(hidden)]
pub fn method_source(self_type: &str, module: &str, method: &str) -> String {
    let name = self_type.split('<').next().unwrap_or(self_type);
    let name = name.rsplit("::").next().unwrap_or(name);
    let name = name
        .trim_start_matches(['&', '*'])
        .trim_start_matches("mut ");
    format!("{module}::{name}::{method}")
}

static ERRORS: Mutex<Vec<RegistryError>> = Mutex::new(Vec::new());

fn errors() -> std::sync::MutexGuard<'static, Vec<RegistryError>> {
    ERRORS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The errors met so far resolving the bulkheads of functions with a body
/// (`#[bulkhead]` outside a `#[resilient]` trait) from
/// [`Registry::global`].
///
/// Such a function resolves its bulkhead on its first call and cannot return
/// a registry error from it. If resolution fails (REG-004: its `config` is
/// not defined in the global registry; REG-008: it shares a `name` with a
/// differently configured bulkhead), the function still runs, under a
/// bulkhead of its own built from the attribute's values over the built-in
/// defaults and left out of the registry, and the error is kept here. Check
/// this list at startup after a first call, or in a test.
///
/// # Examples
///
/// ```
/// use bulkhead::{bulkhead, Rejection};
///
/// #[bulkhead(config = "no-such-config")]
/// fn render() -> Result<(), Rejection> {
///     Ok(())
/// }
///
/// assert!(render().is_ok()); // runs, on a fallback bulkhead
/// let errors = bulkhead::function_policy_errors();
/// assert_eq!(errors[0].code(), "REG-004");
/// ```
pub fn function_policy_errors() -> Vec<RegistryError> {
    errors().clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_sources_name_the_self_type_without_its_path() {
        assert_eq!(
            method_source(
                "my_app::shop::Renderer<u32>",
                "my_app::shop",
                "render(&str)"
            ),
            "my_app::shop::Renderer::render(&str)"
        );
        assert_eq!(
            method_source("&mut my_app::Renderer", "my_app", "render()"),
            "my_app::Renderer::render()"
        );
    }
}
