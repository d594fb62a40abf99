//! What the macros emit when the input has errors: the user's item, still
//! usable, next to the errors, so that one mistake does not cascade into
//! errors about everything that uses the item.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{ItemFn, ItemTrait};

use crate::ast::Trait;
use crate::{expand, valid};

/// The trait without its policy attributes and, if the trait can be wrapped
/// at all, a wrapper in which the methods in error simply delegate; then the
/// errors.
pub(crate) fn resilient(item: ItemTrait, error: syn::Error) -> TokenStream {
    // The attribute errors were reported already; only the model is needed.
    let mut ignored = darling::Error::accumulator();
    let model = Trait::from_syn(item, &mut ignored);
    drop(ignored.into_inner());
    let wrapper = valid::unwrappable(&model)
        .is_empty()
        .then(|| expand::wrapper(&model));
    let item = &model.item;
    let error = error.into_compile_error();
    quote!(#item #wrapper #error)
}

/// The function unchanged, then the errors.
pub(crate) fn function(item: &ItemFn, error: syn::Error) -> TokenStream {
    tokens(item.to_token_stream(), error)
}

/// Any input, unchanged, then the errors.
pub(crate) fn tokens(input: TokenStream, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    quote!(#input #error)
}
