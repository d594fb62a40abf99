//! Instance ids (rule B9 in `docs/bulkhead.md`): the id of an unnamed policy of a `#[resilient]`
//! trait's method, `<module_path>::<Trait>#<method>(<param types>)`, and of
//! a function's, `<module_path>::<function>(<param types>)` (or, for a
//! method with a body, `<Self type>::<method>(<param types>)`), and how the
//! parameter types are written into them ([`render`]).
//!
//! Types are written as in source with the spaces removed, except after a
//! comma and between two words (`&'a mut Vec<u8>`, `impl AsRef<str>`), where
//! removing them would change the meaning.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::visit_mut::{self, VisitMut};
use syn::{FnArg, Ident, Lifetime, Signature, TypeImplTrait, TypeParamBound, TypeReference};

/// `concat!(module_path!(), "::Trait#method(types)")`: the id of a method of
/// the trait `trait_name`, a `&'static str` built at compile time.
pub(crate) fn trait_method(trait_name: &Ident, sig: &Signature) -> TokenStream {
    let suffix = format!(
        "::{}#{}{}",
        trait_name.unraw(),
        sig.ident.unraw(),
        params(sig)
    );
    quote!(::bulkhead::__private::concat!(::bulkhead::__private::module_path!(), #suffix))
}

/// `concat!(module_path!(), "::function(types)")`: the id of a free
/// function.
pub(crate) fn function(sig: &Signature) -> TokenStream {
    let suffix = format!("::{}{}", sig.ident.unraw(), params(sig));
    quote!(::bulkhead::__private::concat!(::bulkhead::__private::module_path!(), #suffix))
}

/// `"method(types)"`: the id of a method with a body after its self type,
/// which the generated code names at run time (`type_name::<Self>()`).
pub(crate) fn method(sig: &Signature) -> String {
    format!("{}{}", sig.ident.unraw(), params(sig))
}

/// The parameter list of `sig` without its receiver: `(&str, u32)`. For
/// a method `#[async_trait]` rewrote, the types as written before it named
/// their elided lifetimes (see [`AsWritten`]), so that the id is the same
/// in either order of the attributes.
pub(crate) fn params(sig: &Signature) -> String {
    let rewritten = sig
        .generics
        .lifetimes()
        .any(|param| param.lifetime.ident == crate::symbol::ASYNC_TRAIT);
    let types: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) if rewritten => {
                let mut ty = (*typed.ty).clone();
                AsWritten.visit_type_mut(&mut ty);
                Some(render(ty.to_token_stream()))
            }
            FnArg::Typed(typed) => Some(render(typed.ty.to_token_stream())),
            FnArg::Receiver(_) => None,
        })
        .collect();
    format!("({})", types.join(", "))
}

/// Undoes what `#[async_trait]` does to a parameter's type: it names each
/// elided lifetime `'life0`, `'life1`, ... (`&str` becomes `&'life1 str`,
/// `Cow<'_, str>` becomes `Cow<'life2, str>`) and bounds `impl Trait` by
/// `'async_trait`.
struct AsWritten;

impl AsWritten {
    fn named_by_async_trait(lifetime: &Lifetime) -> bool {
        lifetime
            .ident
            .to_string()
            .strip_prefix("life")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    }
}

impl VisitMut for AsWritten {
    fn visit_type_reference_mut(&mut self, reference: &mut TypeReference) {
        if reference
            .lifetime
            .as_ref()
            .is_some_and(Self::named_by_async_trait)
        {
            reference.lifetime = None;
        }
        visit_mut::visit_type_reference_mut(self, reference);
    }

    fn visit_lifetime_mut(&mut self, lifetime: &mut Lifetime) {
        if Self::named_by_async_trait(lifetime) {
            *lifetime = Lifetime::new("'_", lifetime.span());
        }
    }

    fn visit_type_impl_trait_mut(&mut self, imp: &mut TypeImplTrait) {
        imp.bounds = std::mem::take(&mut imp.bounds)
            .into_iter()
            .filter(|bound| {
                !matches!(bound, TypeParamBound::Lifetime(l) if l.ident == crate::symbol::ASYNC_TRAIT)
            })
            .collect();
        visit_mut::visit_type_impl_trait_mut(self, imp);
    }
}

/// `tokens` written compactly, as described in the module documentation.
pub(crate) fn render(tokens: TokenStream) -> String {
    let mut out = String::new();
    write(&mut out, tokens, &mut false);
    out
}

/// Appends `tokens` to `out`; `word` says whether `out` ends with a word
/// (an identifier or literal), which a following word must be kept apart from.
fn write(out: &mut String, tokens: TokenStream, word: &mut bool) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => {
                if *word {
                    out.push(' ');
                }
                out.push_str(&ident.to_string());
                *word = true;
            }
            TokenTree::Literal(literal) => {
                if *word {
                    out.push(' ');
                }
                out.push_str(&literal.to_string());
                *word = true;
            }
            TokenTree::Punct(punct) => {
                out.push(punct.as_char());
                if punct.as_char() == ',' {
                    out.push(' ');
                }
                *word = false;
            }
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                if group.delimiter() == Delimiter::None {
                    write(out, group.stream(), word);
                } else {
                    out.push_str(open);
                    *word = false;
                    write(out, group.stream(), word);
                    // A trailing comma leaves a space before the closing delimiter.
                    if out.ends_with(", ") {
                        out.pop();
                    }
                    out.push_str(close);
                    *word = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn ids(sig: Signature) -> String {
        params(&sig)
    }

    #[test]
    fn ids_name_the_module_the_trait_or_type_and_the_parameter_types() {
        let sig: Signature = parse_quote!(fn r#resize(&self, image_id: &str, width: u32));
        let name: Ident = parse_quote!(r#Shop);
        assert_eq!(
            trait_method(&name, &sig).to_string(),
            ":: bulkhead :: __private :: concat ! (:: bulkhead :: __private :: module_path ! () , \"::Shop#resize(&str, u32)\")"
        );
        assert_eq!(
            function(&sig).to_string(),
            ":: bulkhead :: __private :: concat ! (:: bulkhead :: __private :: module_path ! () , \"::resize(&str, u32)\")"
        );
        assert_eq!(method(&sig), "resize(&str, u32)");
    }

    #[test]
    fn the_receiver_is_left_out() {
        assert_eq!(
            ids(parse_quote!(fn resize(&self, image_id: &str, width: u32))),
            "(&str, u32)"
        );
        assert_eq!(ids(parse_quote!(fn name(&mut self))), "()");
    }

    #[test]
    fn async_trait_lifetimes_are_left_out_as_they_were_not_written() {
        // `async fn get(&self, key: &str, all: Cow<'_, str>, s: impl
        // AsRef<str>, k: &'a str)` after `#[async_trait]`.
        let sig: Signature = parse_quote!(
            fn get<'a, 'life0, 'life1, 'life2, 'async_trait>(
                &'life0 self,
                key: &'life1 str,
                all: Cow<'life2, str>,
                s: impl 'async_trait + AsRef<str>,
                k: &'a str,
            ) -> Pin<Box<dyn Future<Output = R> + Send + 'async_trait>>
        );
        assert_eq!(ids(sig), "(&str, Cow<'_, str>, impl AsRef<str>, &'a str)");
        let sig: Signature = parse_quote!(fn get<'life1>(&self, key: &'life1 str));
        assert_eq!(
            ids(sig),
            "(&'life1 str)",
            "left as written where #[async_trait] did not write it"
        );
    }

    #[test]
    fn words_stay_apart_and_punctuation_closes_up() {
        assert_eq!(
            ids(parse_quote!(fn f<'a>(&self, v: &'a mut Vec<Option<u8>>))),
            "(&'a mut Vec<Option<u8>>)"
        );
        assert_eq!(
            ids(parse_quote!(fn f(&self, s: impl AsRef<str>))),
            "(impl AsRef<str>)"
        );
        assert_eq!(
            ids(parse_quote!(fn f(&self, p: *const u8, q: &dyn Fn(u32) -> u8))),
            "(*const u8, &dyn Fn(u32)->u8)"
        );
    }

    #[test]
    fn commas_are_followed_by_one_space() {
        assert_eq!(
            ids(parse_quote!(fn f(&self, pair: (u32,String), map: HashMap<K,V>))),
            "((u32, String), HashMap<K, V>)"
        );
        assert_eq!(ids(parse_quote!(fn f(&self, one: (u32,)))), "((u32,))");
    }

    #[test]
    fn generics_paths_and_arrays_render_as_written() {
        assert_eq!(
            ids(
                parse_quote!(fn f<T: Clone>(&self, t: T, items: &[T; 4], x: Self::Item, p: std::path::PathBuf))
            ),
            "(T, &[T;4], Self::Item, std::path::PathBuf)"
        );
    }
}
