//! `#[resilient]` beside the attributes that rewrite a trait's methods:
//! `#[async_trait]`, which turns each `async fn` into a `fn` returning
//! `Pin<Box<dyn Future<Output = ..> + Send + 'async_trait>>` (so that the
//! trait can be a `dyn Trait`), and `#[trait_variant::make(..)]`, which
//! makes a variant of the trait whose futures are `Send`.
//!
//! The wrapper implements the trait as they leave it, so `#[resilient]`
//! must read the trait after them. Written below them it does: the
//! compiler expands the outermost attribute first. Written above them, it
//! puts itself back, unexpanded, below the last of them ([`after_rewriters`]),
//! and the compiler expands it again once they have run: both orders give
//! the same trait, the same wrapper and the same instance ids.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, ItemTrait, Path};

use crate::krate::Krate;
use crate::symbol::{ASYNC_TRAIT, MAKE, RESILIENT, TRAIT_VARIANT};

/// `item` with `#[resilient(args)]` put back below the last attribute that
/// rewrites its methods, if it has one: the trait for the compiler to
/// expand again. `None` if no such attribute is left, and `#[resilient]`
/// reads the trait now.
pub(crate) fn after_rewriters(
    args: &TokenStream,
    item: &ItemTrait,
    krate: &Krate,
) -> Option<TokenStream> {
    let last = item.attrs.iter().rposition(|attr| rewrites(attr.path()))?;
    let path = krate.item(RESILIENT.as_str());
    let again: Attribute = if args.is_empty() {
        syn::parse_quote!(#[#path])
    } else {
        syn::parse_quote!(#[#path(#args)])
    };
    let mut item = item.clone();
    item.attrs.insert(last + 1, again);
    Some(item.to_token_stream())
}

/// Whether the attribute at `path` rewrites a trait's methods: a path
/// ending in `async_trait` (the async-trait crate's, or a re-export such
/// as `tonic::async_trait`), or `trait_variant::make`.
pub(crate) fn rewrites(path: &Path) -> bool {
    let words: Vec<String> = path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    match words.as_slice() {
        [.., last] if last == ASYNC_TRAIT.as_str() => true,
        [.., krate, last] => krate == TRAIT_VARIANT.as_str() && last == MAKE.as_str(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;
    use syn::parse_quote;

    #[test]
    fn async_trait_and_trait_variant_rewrite_a_trait() {
        assert!(rewrites(&parse_quote!(async_trait)));
        assert!(rewrites(&parse_quote!(async_trait::async_trait)));
        assert!(rewrites(&parse_quote!(::tonic::async_trait)));
        assert!(rewrites(&parse_quote!(trait_variant::make)));
        assert!(!rewrites(&parse_quote!(make)), "a bare `make` is anyone's");
        assert!(!rewrites(&parse_quote!(doc)));
    }

    #[test]
    fn resilient_above_async_trait_puts_itself_below_it() {
        let item: ItemTrait = parse_quote! {
            /// Docs.
            #[async_trait]
            #[allow(unused)]
            pub trait Repo: Send + Sync {
                #[bulkhead]
                async fn get(&self) -> Result<u8, E>;
            }
        };
        let krate = Krate::new(Some(&parse_quote!(::bulkhead)));
        let again = after_rewriters(&TokenStream::new(), &item, &krate)
            .unwrap()
            .to_string();
        assert!(
            again.starts_with("# [doc = r\" Docs.\"] # [async_trait] # [:: bulkhead :: resilient] # [allow (unused)] pub trait Repo"),
            "{again}"
        );
        let args = quote!(crate = "deps::bulkhead");
        let krate = Krate::new(Some(&parse_quote!(deps::bulkhead)));
        let again = after_rewriters(&args, &item, &krate).unwrap().to_string();
        assert!(
            again.contains("# [deps :: bulkhead :: resilient (crate = \"deps::bulkhead\")]"),
            "{again}"
        );
        let mut plain = item.clone();
        plain.attrs.retain(|attr| !rewrites(attr.path()));
        assert!(after_rewriters(&TokenStream::new(), &plain, &krate).is_none());
    }
}
