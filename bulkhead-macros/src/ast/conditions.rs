//! The conditions (`#[cfg]`, `#[cfg_attr]`) a method exists under, and the
//! policy attributes a `cfg_attr` would hide.

use super::*;

/// The attributes among `attrs` that decide whether an item exists:
/// `#[cfg(..)]`, and `#[cfg_attr(predicate, ..)]` reduced to the conditions
/// it holds (`#[cfg_attr(feature = "x", cfg(unix), doc = "..")]` becomes
/// `#[cfg_attr(feature = "x", cfg(unix))]`; one that holds none is left
/// out). Copied onto everything generated for the item, so that it exists
/// exactly when the item does, and nothing else of the attribute is.
pub(crate) fn conditions(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter_map(|attr| {
            let meta = condition(&attr.meta)?;
            let mut attr = attr.clone();
            attr.meta = meta;
            Some(attr)
        })
        .collect()
}

/// `meta` if it is a condition, or a `cfg_attr` reduced to its conditions.
pub(super) fn condition(meta: &Meta) -> Option<Meta> {
    if meta.path() == CFG {
        return Some(meta.clone());
    }
    if meta.path() != CFG_ATTR {
        return None;
    }
    let (predicate, attrs) = cfg_attr(meta)?;
    let conditions: Vec<Meta> = attrs.iter().filter_map(condition).collect();
    if conditions.is_empty() {
        return None;
    }
    let path = meta.path();
    Some(syn::parse_quote!(#path(#predicate, #(#conditions),*)))
}

/// The predicate and the attributes of `#[cfg_attr(predicate, attrs..)]`.
pub(super) fn cfg_attr(meta: &Meta) -> Option<(Meta, Vec<Meta>)> {
    let list = meta.require_list().ok()?;
    let mut items = list
        .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
        .ok()?
        .into_iter();
    let predicate = items.next()?;
    Some((predicate, items.collect()))
}

/// `attr`, a `#[cfg_attr]` of a trait method, without the policy
/// attributes it holds, which are reported: `#[resilient]` reads the
/// attributes of the methods before the compiler evaluates their
/// conditions, so it cannot apply a policy under one. `None` if nothing
/// else is left in it.
pub(super) fn without_conditional_policy(
    attr: Attribute,
    krate: &Krate,
    errors: &mut Errors,
) -> Option<Attribute> {
    let Some((predicate, attrs)) = cfg_attr(&attr.meta) else {
        return Some(attr);
    };
    let held = |meta: &Meta| held_policy(meta, krate);
    let Some(kind) = attrs.iter().find_map(held) else {
        return Some(attr);
    };
    errors.spanned(
        &attr,
        format!(
            "{}: #[{name}] cannot be applied through #[cfg_attr]: #[resilient] reads the attributes of the trait's methods before their conditions are evaluated; write #[{name}(..)] directly on the method (and put the condition on the whole method with #[cfg(..)] if it is conditional)",
            codes::MALFORMED,
            name = kind.attribute(),
        ),
    );
    let rest: Vec<&Meta> = attrs.iter().filter(|meta| held(meta).is_none()).collect();
    if rest.is_empty() {
        return None;
    }
    let path = attr.path();
    let mut attr = attr.clone();
    attr.meta = syn::parse_quote!(#path(#predicate, #(#rest),*));
    Some(attr)
}

/// The policy attribute `meta` is, or that a `cfg_attr` in it holds.
pub(super) fn held_policy(meta: &Meta, krate: &Krate) -> Option<PolicyKind> {
    if let Some(kind) = PolicyKind::of(meta, krate) {
        return Some(kind);
    }
    if meta.path() != CFG_ATTR {
        return None;
    }
    let (_, attrs) = cfg_attr(meta)?;
    attrs.iter().find_map(|meta| held_policy(meta, krate))
}
