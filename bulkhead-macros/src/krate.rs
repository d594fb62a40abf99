//! The path generated code names the facade by ([`Krate`]): `::bulkhead`,
//! or the name the user's Cargo.toml gives the dependency (`bh = { package
//! = "bulkhead" }`, found as the ecosystem finds it, with the
//! `proc-macro-crate` crate), or the path written with `crate = "..."` on
//! `#[resilient]` or on a function's policy attribute (serde's
//! `#[serde(crate = "...")]`), for a facade re-exported by another crate.
//!
//! Generated code is written against `::bulkhead::__private` (one spelling,
//! easy to read in the expansion tests); [`Krate::retarget`] rewrites that
//! prefix, once, in the finished expansion, so that no path can be missed:
//! to the facade's path, and to its versioned support module
//! ([`private_module`]: `__private_0_1_0` for version 0.1.0, as serde's
//! `__private228`), so that a macro crate of another version than the
//! facade's fails to compile at once instead of generating code against
//! support items that changed.

use proc_macro2::{Group, Ident, Spacing, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::Path;
use syn::ext::IdentExt;

use crate::symbol::CRATE;

/// The facade's path in the user's crate.
#[derive(Clone, Debug)]
pub(crate) struct Krate {
    /// `::bulkhead`, `::bh`, `crate::deps::bulkhead`, ...
    path: Path,
    /// Whether `path` is `::bulkhead`, which needs no rewriting.
    default: bool,
    /// Whether `path` was written with `crate = "..."`: its tokens keep the
    /// string's span, so that an error naming them points at it.
    written: bool,
    /// The name the crate being compiled gives the dependency.
    found: String,
}

impl Krate {
    /// The path `crate = "..."` gave, or else the dependency's name in the
    /// Cargo.toml of the crate being compiled (`::bulkhead` if it cannot be
    /// read, or names the `bulkhead` package itself: its tests and examples
    /// are other crates, which name it `bulkhead`).
    pub(crate) fn new(written: Option<&Path>) -> Self {
        let found = found_name();
        let path = match written {
            Some(path) => path.clone(),
            None => {
                let name = Ident::new(&found, Span::call_site());
                syn::parse_quote!(::#name)
            }
        };
        let default = path.leading_colon.is_some()
            && path.segments.len() == 1
            && path.segments[0].ident == CRATE
            && path.segments[0].arguments.is_none();
        Krate {
            path,
            default,
            written: written.is_some(),
            found,
        }
    }

    /// `<facade>::name`: an item of the facade, such as `resilient`.
    pub(crate) fn item(&self, name: &str) -> TokenStream {
        let path = &self.path;
        let name = Ident::new(name, Span::call_site());
        quote::quote!(#path::#name)
    }

    /// Whether `prefix` (the segments of an attribute's path before its
    /// last) names the facade: `bulkhead`, the dependency's name, or the
    /// path given with `crate = "..."`, with or without a leading `::`.
    fn owns(&self, prefix: &[String]) -> bool {
        let own: Vec<String> = self
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        prefix.len() == 1 && (prefix[0] == CRATE.as_str() || prefix[0] == self.found)
            || prefix == own.as_slice()
    }

    /// The last word of an attribute's `path` (raw identifiers unraw), and
    /// whether the path is that word alone, from the facade, or from
    /// elsewhere.
    pub(crate) fn origin(&self, path: &Path) -> Option<(String, Origin)> {
        let last = path.segments.last()?.ident.unraw().to_string();
        if path.segments.len() == 1 && path.leading_colon.is_none() {
            return Some((last, Origin::Bare));
        }
        let prefix: Vec<String> = path
            .segments
            .iter()
            .take(path.segments.len() - 1)
            .map(|segment| segment.ident.unraw().to_string())
            .collect();
        let origin = if self.owns(&prefix) {
            Origin::Crate
        } else {
            Origin::Other
        };
        Some((last, origin))
    }

    /// `tokens` with every `::bulkhead::__private` naming this path's
    /// versioned support module instead ([`private_module`]).
    pub(crate) fn retarget(&self, tokens: TokenStream) -> TokenStream {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = Vec::with_capacity(tokens.len());
        let mut i = 0;
        while i < tokens.len() {
            if let Some((span, private_span)) = private_path_at(&tokens[i..]) {
                let path = if self.default {
                    tokens[i..i + 3].iter().cloned().collect()
                } else if self.written {
                    self.path.to_token_stream()
                } else {
                    respanned(self.path.to_token_stream(), span)
                };
                out.extend(path);
                out.extend(tokens[i + 3..i + 5].iter().cloned());
                out.push(TokenTree::Ident(Ident::new(
                    &private_module(),
                    private_span,
                )));
                i += 6;
                continue;
            }
            out.push(match &tokens[i] {
                TokenTree::Group(group) => {
                    let mut inner = Group::new(group.delimiter(), self.retarget(group.stream()));
                    inner.set_span(group.span());
                    TokenTree::Group(inner)
                }
                other => other.clone(),
            });
            i += 1;
        }
        out.into_iter().collect()
    }
}

/// Where an attribute's path comes from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Origin {
    /// A word alone: `timeout`.
    Bare,
    /// From the facade: `bulkhead::timeout`, `::bh::timeout`.
    Crate,
    /// From another crate: `ntest::timeout`.
    Other,
}

/// The name of the facade's support module for generated code: `__private_`
/// and this crate's version, `.` written `_` (the facade's own version: the
/// two are released together, pinned with `=`).
pub(crate) fn private_module() -> String {
    format!(
        "__private_{}",
        env!("CARGO_PKG_VERSION").replace(['.', '-', '+'], "_")
    )
}

/// The spans of `bulkhead` and of `__private` if `tokens` starts with
/// `::bulkhead::__private`.
fn private_path_at(tokens: &[TokenTree]) -> Option<(Span, Span)> {
    let [
        TokenTree::Punct(a),
        TokenTree::Punct(b),
        TokenTree::Ident(krate),
        TokenTree::Punct(c),
        TokenTree::Punct(d),
        TokenTree::Ident(private),
        ..,
    ] = tokens
    else {
        return None;
    };
    let colons = |first: &proc_macro2::Punct, second: &proc_macro2::Punct| {
        first.as_char() == ':' && first.spacing() == Spacing::Joint && second.as_char() == ':'
    };
    (colons(a, b) && colons(c, d) && *krate == CRATE && private == "__private")
        .then(|| (krate.span(), private.span()))
}

/// `tokens` (a path, without groups) with every span set to `span`.
fn respanned(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            token.set_span(span);
            token
        })
        .collect()
}

/// The name the crate being compiled gives the `bulkhead` package.
fn found_name() -> String {
    match proc_macro_crate::crate_name(CRATE.as_str()) {
        Ok(proc_macro_crate::FoundCrate::Name(name)) => name,
        Ok(proc_macro_crate::FoundCrate::Itself) | Err(_) => CRATE.as_str().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse_quote;

    impl Krate {
        /// `::bulkhead`, for unit tests.
        pub(crate) fn plain() -> Self {
            Krate::new(Some(&syn::parse_quote!(::bulkhead)))
        }
    }

    #[test]
    fn the_private_paths_are_retargeted_at_any_depth() {
        let krate = Krate::new(Some(&parse_quote!(::bh)));
        let out = krate.retarget(quote!(
            let x = ::bulkhead::__private::Some(1);
            { ::bulkhead::__private::drop(x) }
            ::bulkhead::Registry
        ));
        let private = private_module();
        assert_eq!(
            out.to_string(),
            format!(
                "let x = :: bh :: {private} :: Some (1) ; {{ :: bh :: {private} :: drop (x) }} :: bulkhead :: Registry"
            )
        );
        let nested = Krate::new(Some(&parse_quote!(crate::deps::bulkhead)));
        assert_eq!(
            nested
                .retarget(quote!(::bulkhead::__private::None))
                .to_string(),
            format!("crate :: deps :: bulkhead :: {private} :: None")
        );
        let default = Krate::new(Some(&parse_quote!(::bulkhead)));
        assert_eq!(
            default
                .retarget(quote!(::bulkhead::__private::None))
                .to_string(),
            format!(":: bulkhead :: {private} :: None")
        );
    }

    #[test]
    fn the_support_module_is_named_after_the_version() {
        let version = env!("CARGO_PKG_VERSION");
        assert!(private_module().starts_with("__private_"));
        assert_eq!(
            private_module(),
            format!("__private_{}", version.replace('.', "_"))
        );
    }

    #[test]
    fn the_default_path_is_left_alone_and_owns_its_attributes() {
        let krate = Krate::new(Some(&parse_quote!(::bulkhead)));
        assert!(krate.default);
        assert!(krate.owns(&["bulkhead".to_owned()]));
        assert!(!krate.owns(&["ntest".to_owned()]));
        let renamed = Krate::new(Some(&parse_quote!(::bh)));
        assert!(renamed.owns(&["bh".to_owned()]));
        assert!(renamed.owns(&["bulkhead".to_owned()]));
    }
}
