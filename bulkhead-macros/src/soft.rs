//! What the macros emit when the input has errors (they fail softly): the
//! user's item, still usable, next to the errors, so that one mistake does
//! not cascade into errors about everything that uses the item. (A trait that parses keeps
//! the wrapper of the methods without errors: `expand::resilient`.)

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{Item, ItemFn, Stmt};

use crate::krate::Krate;
use crate::policies::{PolicyAttribute, PolicyKind};
use crate::symbol::{APPLIED, POLICY_STATIC};

/// Whether `input`, which does not parse, still reads as an item that
/// `keyword` (`trait`, `fn`) introduces: the keyword comes before the body.
pub(crate) fn looks_like(input: &TokenStream, keyword: &str) -> bool {
    input
        .clone()
        .into_iter()
        .take_while(
            |token| !matches!(token, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace),
        )
        .any(|token| matches!(token, TokenTree::Ident(ident) if ident == keyword))
}

/// A trait with a syntax error (in a default method, say): syn's error, and
/// the tokens unchanged but for the policy attributes of the trait's items,
/// which mean nothing without the wrapper and would only add "cannot find
/// attribute" errors.
pub(crate) fn unparsed_trait(input: TokenStream, krate: &Krate, error: syn::Error) -> TokenStream {
    let mut body_seen = false;
    let tokens = input.into_iter().map(|token| match token {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Brace && !body_seen => {
            body_seen = true;
            let mut body = Group::new(Delimiter::Brace, without_policies(group.stream(), krate));
            body.set_span(group.span());
            TokenTree::Group(body)
        }
        other => other,
    });
    let error = error.into_compile_error();
    let tokens: TokenStream = tokens.collect();
    quote!(#tokens #error)
}

/// `tokens` without the policy attributes at their top level.
fn without_policies(tokens: TokenStream, krate: &Krate) -> TokenStream {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut kept = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let attribute = match (&tokens[i], tokens.get(i + 1)) {
            (TokenTree::Punct(pound), Some(TokenTree::Group(group))) => {
                pound.as_char() == '#'
                    && group.delimiter() == Delimiter::Bracket
                    && syn::parse2::<syn::Meta>(group.stream())
                        .is_ok_and(|meta| PolicyKind::of(&meta, krate).is_some())
            }
            _ => false,
        };
        if attribute {
            i += 2;
            continue;
        }
        kept.push(tokens[i].clone());
        i += 1;
    }
    kept.into_iter().collect()
}

/// The function, its policy attributes marked as applied (their errors are
/// reported already, and so the attributes leave it unchanged), and the
/// errors at the start of its body, which is what lets the marks be
/// honoured (see [`APPLIED`]).
pub(crate) fn function(mut item: ItemFn, krate: &Krate, error: syn::Error) -> TokenStream {
    let marker = Ident::new(APPLIED.as_str(), Span::call_site());
    for attr in &mut item.attrs {
        if PolicyKind::of(&attr.meta, krate).is_some() {
            let path = attr.path().clone();
            attr.meta = syn::parse_quote!(#path(#marker));
        }
    }
    let error = error.into_compile_error();
    item.block
        .stmts
        .insert(0, Stmt::Item(Item::Verbatim(error)));
    item.to_token_stream()
}

/// Whether a function marked `#[policy(__bulkhead_applied)]` was wrapped
/// or reported by another policy attribute: its body names the static of
/// its policies, or holds the errors.
pub(crate) fn was_applied(input: &TokenStream) -> bool {
    input.clone().into_iter().any(|token| match token {
        TokenTree::Ident(ident) => ident == POLICY_STATIC.as_str() || ident == "compile_error",
        TokenTree::Group(group) => was_applied(&group.stream()),
        _ => false,
    })
}

/// Any input, unchanged, then the errors.
pub(crate) fn tokens(input: TokenStream, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    quote!(#input #error)
}
