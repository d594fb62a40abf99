//! What keeps a trait or a method from being wrapped at all (ATR-007):
//! unsupported supertraits, receivers, bounds on `Self`, captures.

use super::*;

/// Why `#[resilient]` cannot implement the trait for its wrapper, if it
/// cannot (ATR-007). Empty if the wrapper can be generated.
pub(super) fn unwrappable(model: &Trait) -> Vec<syn::Error> {
    let item = &model.item;
    let name = &item.ident;
    let mut reasons = Vec::new();
    let mut reason = |tokens: &dyn ToTokens, why: String| {
        reasons.push(syn::Error::new_spanned(
            tokens,
            format!("{}: cannot wrap trait `{name}`: {why}", codes::UNWRAPPABLE),
        ));
    };
    if let Some(unsafety) = &item.unsafety {
        reason(
            unsafety,
            "it is an `unsafe trait`, and the wrapper cannot promise its safety contract".into(),
        );
    }
    for bound in item.supertraits.iter().chain(self_bounds(item)) {
        if let Some(why) = unsupported_supertrait(bound) {
            reason(bound, why);
        }
    }
    let selves = SelfPaths::of(model);
    for predicate in item
        .generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
    {
        let WherePredicate::Type(p) = predicate else {
            continue;
        };
        if is_self(&p.bounded_ty) {
            continue;
        }
        if let Some(tokens) = selves.bare(p.bounded_ty.to_token_stream()) {
            reason(
                &tokens,
                format!(
                    "its where clause bounds `{}`, a type made of `Self`, which the wrapper cannot promise from its delegate's bounds; bound `Self` itself (for `&Self: Send`, a `Sync` supertrait)",
                    crate::ids::render(p.bounded_ty.to_token_stream())
                ),
            );
        }
    }
    for trait_item in &item.items {
        match trait_item {
            TraitItem::Fn(_) | TraitItem::Type(_) | TraitItem::Const(_) => {}
            TraitItem::Macro(mac) => reason(
                mac,
                "its items include a macro call, whose expansion `#[resilient]` cannot see; write the items out".into(),
            ),
            other => reason(
                other,
                "it contains an item `#[resilient]` does not understand".into(),
            ),
        }
    }
    for ty in &model.types {
        if let Some(tokens) = selves.bare(ty.bounds.to_token_stream()) {
            reason(
                &tokens,
                format!(
                    "the bounds of `{}` name `Self`, which is the wrapper in its implementation, not the delegate",
                    ty.ident
                ),
            );
        }
    }
    for constant in &model.consts {
        if let Some(tokens) = selves.bare(constant.ty.to_token_stream()) {
            reason(
                &tokens,
                format!(
                    "the type of `{}` is or contains `Self`, which the wrapper cannot produce from its delegate's",
                    constant.ident
                ),
            );
        }
    }
    for method in &model.methods {
        for (tokens, why) in unwrappable_method(method, &selves) {
            reason(&tokens, why);
        }
    }
    reasons
}

/// Why the wrapper cannot implement `method`, each with the tokens to span.
pub(super) fn unwrappable_method(
    method: &Method,
    selves: &SelfPaths<'_>,
) -> Vec<(TokenStream, String)> {
    let name = &method.sig.ident;
    let mut reasons = Vec::new();
    if let Some((_, signature)) = INHERENT.iter().find(|(inherent, _)| name == inherent) {
        reasons.push((
            name.to_token_stream(),
            format!(
                "its method `{name}` would be shadowed by the wrapper's own `{signature}`: a call `wrapper.{name}(..)` picks the inherent method over the trait's; rename the trait's method"
            ),
        ));
    }
    for input in &method.sig.inputs {
        let attrs = match input {
            FnArg::Typed(typed) => &typed.attrs,
            FnArg::Receiver(receiver) => &receiver.attrs,
        };
        for attr in attrs {
            reasons.push((
                attr.to_token_stream(),
                format!(
                    "a parameter of `{name}` has an attribute, which the wrapper cannot carry over to its call of the delegate; remove it (to make the method conditional, put #[cfg(..)] on the whole method)"
                ),
            ));
        }
    }
    if let SelfArg::Other(receiver) = &method.self_arg {
        reasons.push((
            receiver.clone(),
            format!(
                "method `{name}` takes `self` as a type the wrapper cannot pass on to its delegate; use `self`, `&self` or `&mut self`"
            ),
        ));
    }
    let sig = &method.sig;
    let self_bounds: Vec<&syn::PredicateType> = sig
        .generics
        .where_clause
        .iter()
        .flat_map(|w| &w.predicates)
        .filter_map(|predicate| match predicate {
            WherePredicate::Type(p)
                if is_self(&p.bounded_ty) && !is_harmless_self_bound(predicate) =>
            {
                Some(p)
            }
            _ => None,
        })
        .collect();
    // `#[async_trait]` writes its bounds at its own attribute: the method's
    // name says more.
    let by_async_trait = sig
        .generics
        .lifetimes()
        .any(|param| param.lifetime.ident == crate::symbol::ASYNC_TRAIT);
    for bound in &self_bounds {
        let tokens = if by_async_trait {
            name.to_token_stream()
        } else {
            bound.to_token_stream()
        };
        reasons.push((tokens, self_bound(name, selves.trait_name, bound)));
    }
    let mut mentions = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(typed) => Some(typed.ty.to_token_stream()),
            FnArg::Receiver(_) => None,
        })
        .chain(std::iter::once(without_captures(&sig.output)))
        .chain(sig.generics.params.iter().map(ToTokens::to_token_stream))
        .chain(
            sig.generics
                .where_clause
                .iter()
                .flat_map(|w| &w.predicates)
                .filter(|predicate| {
                    !is_harmless_self_bound(predicate)
                        && !matches!(predicate, WherePredicate::Type(p) if is_self(&p.bounded_ty))
                })
                .map(ToTokens::to_token_stream),
        );
    if let Some(tokens) = mentions.find_map(|tokens| selves.bare(tokens)) {
        reasons.push((
            tokens,
            format!(
                "method `{name}` names `Self` outside its receiver, and in the wrapper `Self` is the wrapper, not the delegate; use an associated type (`Self::Item`) or a generic parameter"
            ),
        ));
    }
    reasons
}

/// Why the wrapper cannot implement a method whose where clause bounds
/// `Self` by a trait (`Self: Sync`): in the wrapper `Self` is the wrapper,
/// which meets the bound only when its delegate does, and a method's where
/// clause cannot say that of the delegate. A supertrait can.
pub(super) fn self_bound(name: &Ident, trait_name: &Ident, bound: &syn::PredicateType) -> String {
    let traits: Vec<String> = bound
        .bounds
        .iter()
        .filter_map(|bound| match bound {
            TypeParamBound::Trait(t) => t
                .path
                .segments
                .last()
                .map(|last| render(last.to_token_stream())),
            _ => None,
        })
        .collect();
    let traits = traits.join(" + ");
    format!(
        "method `{name}` requires `Self: {traits}`, which the wrapper cannot promise for its delegate in a method's where clause; make it a supertrait instead (`trait {trait_name}: {traits}`). (`#[async_trait]` adds `Self: Sync` to a default `async fn` taking `&self`, and `Self: Send` to one taking `&mut self` or `self`, when the trait does not have that supertrait)"
    )
}

/// The return type without its `use<..>` bounds: the `Self` a trait's
/// `use<..>` must list is the wrapper in the wrapper's signature, whose
/// future does capture it.
pub(super) fn without_captures(output: &ReturnType) -> TokenStream {
    struct Captures;
    impl VisitMut for Captures {
        fn visit_type_impl_trait_mut(&mut self, imp: &mut TypeImplTrait) {
            imp.bounds = std::mem::take(&mut imp.bounds)
                .into_iter()
                .filter(|bound| !matches!(bound, TypeParamBound::PreciseCapture(_)))
                .collect();
            syn::visit_mut::visit_type_impl_trait_mut(self, imp);
        }
    }
    let mut output = output.clone();
    Captures.visit_return_type_mut(&mut output);
    output.to_token_stream()
}

/// `Self: Sized` and `Self: 'a` mean the same for the wrapper as for its
/// delegate.
pub(super) fn is_harmless_self_bound(predicate: &WherePredicate) -> bool {
    match predicate {
        WherePredicate::Type(p) if is_self(&p.bounded_ty) => {
            p.bounds.iter().all(|bound| match bound {
                TypeParamBound::Lifetime(_) => true,
                // `Sized`, `::std::marker::Sized`.
                TypeParamBound::Trait(t) => {
                    t.path.segments.last().is_some_and(|s| s.ident == "Sized")
                }
                _ => false,
            })
        }
        _ => true,
    }
}

pub(super) fn unsupported_supertrait(bound: &TypeParamBound) -> Option<String> {
    match bound {
        TypeParamBound::Lifetime(_) => None,
        TypeParamBound::Trait(t) if t.maybe.is_some() => None,
        TypeParamBound::Trait(t) => {
            let last = t.path.segments.last()?;
            if SUPERTRAITS.iter().any(|name| last.ident == name) {
                return None;
            }
            Some(format!(
                "its supertrait `{}` would have to be implemented by the wrapper too; `#[resilient]` supports only {} as supertraits",
                crate::ids::render(t.path.to_token_stream()),
                SUPERTRAITS.join(", ")
            ))
        }
        _ => Some("it has a bound `#[resilient]` does not understand".into()),
    }
}

/// Finds `Self` where the wrapper cannot keep it: anywhere but at the start
/// of a path (`Self::Item`) or as the trait's own qualified self
/// (`<Self as ThisTrait<..>>::Item`), both of which mean the delegate's
/// associated items in the wrapper too.
pub(super) struct SelfPaths<'a> {
    trait_name: &'a Ident,
    /// The trait's own generic arguments, rendered: `<K, V>`, or empty.
    trait_args: String,
}

impl<'a> SelfPaths<'a> {
    pub(super) fn of(model: &'a Trait) -> Self {
        let (_, args, _) = model.item.generics.split_for_impl();
        SelfPaths {
            trait_name: &model.item.ident,
            trait_args: crate::ids::render(args.to_token_stream()),
        }
    }

    /// The first `Self` in `tokens` the wrapper cannot keep, with the
    /// qualified path around it if it has one.
    pub(super) fn bare(&self, tokens: TokenStream) -> Option<TokenStream> {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Ident(ident) if ident == "Self" => {
                    // `Self::Item`, not `Self: ::core::marker::Sync`.
                    if is_joint(tokens.get(i + 1), ':') && is_punct(tokens.get(i + 2), ':') {
                        i += 1;
                        continue;
                    }
                    let qualified = i > 0
                        && is_punct(tokens.get(i - 1), '<')
                        && matches!(tokens.get(i + 1), Some(TokenTree::Ident(a)) if a == "as");
                    if !qualified {
                        return Some(tokens[i].to_token_stream());
                    }
                    let close = closing_angle(&tokens, i + 2)?;
                    if !self.is_own_trait(&tokens[i + 2..close]) {
                        return Some(tokens[i - 1..=close].iter().cloned().collect());
                    }
                    i = close + 1;
                    continue;
                }
                TokenTree::Group(group) => {
                    if let Some(found) = self.bare(group.stream()) {
                        return Some(found);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    /// Whether `path` is the trait itself with its own generic arguments.
    fn is_own_trait(&self, path: &[TokenTree]) -> bool {
        let path: TokenStream = path.iter().cloned().collect();
        let Ok(path) = syn::parse2::<syn::Path>(path) else {
            return false;
        };
        path.segments.last().is_some_and(|last| {
            last.ident == *self.trait_name
                && crate::ids::render(last.arguments.to_token_stream()) == self.trait_args
        })
    }
}
