//! A keyed bulkhead's key: the parameter `#[bulkhead(.., key = tenant)]`
//! names ([`KeyArg::find`], ATR-021 for one that cannot key it), and the
//! type of the keys the bulkhead keeps ([`KeyArg::key_type`]): the
//! parameter's type `P`, or `Q::Owned` for a parameter `&Q` (`String` for
//! `&str`).

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{FnArg, Generics, Ident, Pat, Signature, Type};

use crate::attr::KeyParam;
use crate::codes;

/// The parameter a keyed bulkhead's `key` names.
#[derive(Clone, Debug)]
pub(crate) struct KeyArg {
    /// Its place among the parameters other than `self`.
    pub(crate) position: usize,
    /// Its name, as the signature binds it.
    pub(crate) name: Ident,
    /// Its type as written.
    pub(crate) ty: Type,
    /// `Q` of a parameter `&Q`: the call passes the reference itself, the
    /// bulkhead keeps `Q::Owned`.
    pub(crate) borrowed: Option<Type>,
}

impl KeyArg {
    /// The parameter of `sig` that `key` names, or why it cannot key a
    /// bulkhead (ATR-021, spanned on the name, or on the parameter's
    /// type). `generics` are the trait's (a wrapper's field cannot name
    /// them).
    pub(crate) fn find(
        sig: &Signature,
        generics: &Generics,
        key: &KeyParam,
    ) -> Result<KeyArg, syn::Error> {
        let code = codes::KEY;
        let name = &key.ident;
        let method = &sig.ident;
        if name == "self" {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "{code}: `key` names `self`, the receiver of `{method}`; a keyed bulkhead's key is the value of another parameter (a tenant, a user id), as in `key = tenant`"
                ),
            ));
        }
        let mut names = Vec::new();
        let mut position = 0;
        let mut found = None;
        for input in &sig.inputs {
            let FnArg::Typed(typed) = input else {
                continue;
            };
            if let Pat::Ident(pat) = &*typed.pat {
                if pat.ident.unraw() == name.unraw() {
                    found = Some((position, &*typed.ty, pat.ident.clone()));
                }
                names.push(pat.ident.unraw().to_string());
            }
            position += 1;
        }
        let Some((position, ty, binding)) = found else {
            let hint = match bulkhead_keys::did_you_mean(
                &name.to_string(),
                names.iter().map(String::as_str),
            ) {
                Some(meant) => format!("; did you mean `{meant}`?"),
                None if names.is_empty() => format!("; `{method}` takes no parameter but `self`"),
                None => format!(
                    "; its parameters are {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(syn::Error::new(
                name.span(),
                format!("{code}: `key` names `{name}`, which is no parameter of `{method}`{hint}"),
            ));
        };
        let (borrowed, inner) = match ty {
            Type::Reference(reference) if reference.mutability.is_some() => {
                return Err(syn::Error::new_spanned(
                    ty,
                    format!(
                        "{code}: the key `{name}` is borrowed mutably; a keyed bulkhead reads its key: take it as `&{}` or by value",
                        crate::ids::render(reference.elem.to_token_stream())
                    ),
                ));
            }
            Type::Reference(reference) => (Some((*reference.elem).clone()), &*reference.elem),
            _ => (None, ty),
        };
        if let Some(why) = not_concrete(inner, sig, generics) {
            return Err(syn::Error::new_spanned(
                ty,
                format!(
                    "{code}: the key `{name}` has a type that names {why}; the wrapper keeps the keyed bulkhead in a field of one key type: give the key a concrete type (`&str`, `String`, `u64`, an id of your own)"
                ),
            ));
        }
        Ok(KeyArg {
            position,
            name: binding,
            ty: ty.clone(),
            borrowed,
        })
    }

    /// `K`, the type of the keys the bulkhead keeps, spanned on the
    /// parameter's type so that the type checker's errors about it point
    /// there.
    pub(crate) fn key_type(&self) -> TokenStream {
        let span = self.span();
        match &self.borrowed {
            Some(q) => {
                quote_spanned!(span=> <#q as ::bulkhead::__private::ToOwned>::Owned)
            }
            None => {
                let ty = &self.ty;
                quote!(#ty)
            }
        }
    }

    /// The span of the parameter's type: the type checker's errors about
    /// the key point there.
    pub(crate) fn span(&self) -> Span {
        match &self.borrowed {
            Some(q) => q.span(),
            None => self.ty.span(),
        }
    }

    /// What the call passes to the bulkhead, a `&Q` or a `&K`, from
    /// `held`, what [`held`](Self::held) made of the argument.
    pub(crate) fn passed(&self, held: &Ident) -> TokenStream {
        let span = Span::mixed_site();
        if self.borrowed.is_some() {
            quote_spanned!(span=> #held)
        } else {
            quote_spanned!(span=> &#held)
        }
    }

    /// What a future keeps of the key, from the argument `argument`, so
    /// that the argument itself can be moved into the call: the reference
    /// (a copy), or a clone of a key taken by value.
    pub(crate) fn held(&self, argument: &Ident) -> TokenStream {
        let span = Span::mixed_site();
        if self.borrowed.is_some() {
            quote_spanned!(span=> #argument)
        } else {
            quote_spanned!(span=> ::bulkhead::__private::Clone::clone(&#argument))
        }
    }
}

/// What in `ty` a field of the wrapper cannot name, if anything: a type
/// parameter of the method or the trait, `Self`, an `impl Trait`, or a
/// lifetime other than `'static`.
fn not_concrete(ty: &Type, sig: &Signature, generics: &Generics) -> Option<String> {
    let params: Vec<String> = sig
        .generics
        .type_params()
        .chain(generics.type_params())
        .map(|param| param.ident.to_string())
        .chain(
            sig.generics
                .const_params()
                .chain(generics.const_params())
                .map(|param| param.ident.to_string()),
        )
        .collect();
    if matches!(ty, Type::ImplTrait(_)) {
        return Some("`impl Trait`".to_owned());
    }
    find_in(ty.to_token_stream(), &params)
}

fn find_in(tokens: TokenStream, params: &[String]) -> Option<String> {
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(ident) if ident == "Self" => return Some("`Self`".to_owned()),
            TokenTree::Ident(ident) if ident == "impl" => {
                return Some("`impl Trait`".to_owned());
            }
            TokenTree::Ident(ident) if params.contains(&ident.to_string()) => {
                return Some(format!("the type parameter `{ident}`"));
            }
            TokenTree::Punct(punct) if punct.as_char() == '\'' => {
                if let Some(TokenTree::Ident(lifetime)) = tokens.next()
                    && lifetime != "static"
                {
                    return Some(format!("the lifetime `'{lifetime}`"));
                }
            }
            TokenTree::Punct(punct) if punct.as_char() == '&' => {
                return Some("a borrowed type inside it".to_owned());
            }
            TokenTree::Group(group) => {
                if let Some(found) = find_in(group.stream(), params) {
                    return Some(found);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn find(sig: Signature, key: &str) -> Result<(usize, String, bool), String> {
        let key = KeyParam {
            ident: Ident::new(key, Span::call_site()),
        };
        KeyArg::find(&sig, &Generics::default(), &key)
            .map(|arg| {
                (
                    arg.position,
                    arg.key_type().to_string(),
                    arg.borrowed.is_some(),
                )
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_borrowed_key_is_kept_owned_and_a_key_by_value_as_it_is() {
        assert_eq!(
            find(parse_quote!(fn f(&self, id: u8, tenant: &str)), "tenant"),
            Ok((
                1,
                "< str as :: bulkhead :: __private :: ToOwned > :: Owned".to_owned(),
                true
            ))
        );
        assert_eq!(
            find(parse_quote!(fn f(&self, tenant: u64)), "tenant"),
            Ok((0, "u64".to_owned(), false))
        );
        assert_eq!(
            find(parse_quote!(fn f(&self, tenant: &'static str)), "tenant").map(|k| k.0),
            Ok(0)
        );
    }

    #[test]
    fn a_key_that_cannot_key_a_bulkhead_is_atr_021() {
        let error = |sig: Signature, key: &str| find(sig, key).unwrap_err();
        assert_eq!(
            error(parse_quote!(fn f(&self, tenant: &str)), "tennant"),
            "ATR-021: `key` names `tennant`, which is no parameter of `f`; did you mean `tenant`?"
        );
        assert_eq!(
            error(parse_quote!(fn f(&self)), "tenant"),
            "ATR-021: `key` names `tenant`, which is no parameter of `f`; `f` takes no parameter but `self`"
        );
        assert!(
            error(parse_quote!(fn f(&self, a: u8)), "self")
                .starts_with("ATR-021: `key` names `self`")
        );
        assert!(
            error(parse_quote!(fn f(&self, k: &mut String)), "k")
                .starts_with("ATR-021: the key `k` is borrowed mutably")
        );
        for (sig, why) in [
            (parse_quote!(fn f<T>(&self, k: T)), "the type parameter `T`"),
            (parse_quote!(fn f(&self, k: Self::Id)), "`Self`"),
            (
                parse_quote!(fn f<'a>(&self, k: Id<'a>)),
                "the lifetime `'a`",
            ),
            (parse_quote!(fn f(&self, k: impl Hash)), "`impl Trait`"),
            (
                parse_quote!(fn f(&self, k: &[&str])),
                "a borrowed type inside it",
            ),
        ] {
            let message = error(sig, "k");
            assert!(message.contains(why), "{message}");
        }
    }
}
