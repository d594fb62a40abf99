//! What a method or function returns (`Result`, a future of one, a boxed
//! future) and its receiver's lifetime, read from its signature.

use super::*;

impl SelfArg {
    pub(super) fn of(sig: &Signature) -> Self {
        let Some(receiver) = sig.receiver() else {
            return SelfArg::None;
        };
        match &receiver.kind {
            ReceiverKind::Value => SelfArg::Owned,
            ReceiverKind::Reference(_, _, None) => SelfArg::Ref,
            ReceiverKind::Reference(_, _, Some(_)) => SelfArg::RefMut,
            ReceiverKind::Typed(_, ty) => match strip(ty) {
                Type::Path(path) if path.qself.is_none() && path.path.is_ident("Self") => {
                    SelfArg::Owned
                }
                Type::Reference(reference) if is_self(&reference.elem) => {
                    if reference.mutability.is_some() {
                        SelfArg::RefMut
                    } else {
                        SelfArg::Ref
                    }
                }
                other => SelfArg::Other(other.to_token_stream()),
            },
            _ => SelfArg::Other(receiver.to_token_stream()),
        }
    }
}

/// The lifetime of a receiver written `&'a self` or `self: &'a Self`.
pub(super) fn receiver_lifetime(sig: &Signature) -> Option<&Lifetime> {
    match &sig.receiver()?.kind {
        ReceiverKind::Reference(_, lifetime, _) => lifetime.as_ref(),
        ReceiverKind::Typed(_, ty) => match strip(ty) {
            Type::Reference(reference) => reference.lifetime.as_ref(),
            _ => None,
        },
        _ => None,
    }
}

impl Returns {
    /// Classifies the return type of `sig`, a method of a trait with the
    /// generics `outer` (none for a function).
    pub(crate) fn of(sig: &Signature, outer: &Generics) -> Self {
        let (value, written) = match &sig.output {
            ReturnType::Default => {
                let close = sig.paren_token.span.close();
                (syn::parse_quote!(()), quote::quote_spanned!(close=> ()))
            }
            ReturnType::Type(_, ty) => ((**ty).clone(), ty.to_token_stream()),
        };
        let (flavor, bounds, output) = if sig.asyncness.is_some() {
            (Flavor::AsyncFn, None, value.clone())
        } else if let Some((bounds, output)) = impl_future(&value) {
            (Flavor::ImplFuture, Some(bounds), output)
        } else if let Some((bounds, output)) = boxed_future(&value) {
            (Flavor::BoxedFuture, Some(bounds), output)
        } else {
            (Flavor::Sync, None, value.clone())
        };
        let bounds = bounds.unwrap_or_default();
        let own = receiver_lifetime(sig);
        let lifetimes: Vec<&Lifetime> = bounds
            .iter()
            .filter_map(|bound| match bound {
                TypeParamBound::Lifetime(lifetime) => Some(lifetime),
                _ => None,
            })
            .collect();
        // `use<..>` without the receiver's lifetime: the future may not
        // borrow the wrapper.
        let captures: Vec<&syn::PreciseCapture> = bounds
            .iter()
            .filter_map(|bound| match bound {
                TypeParamBound::PreciseCapture(capture) => Some(capture),
                _ => None,
            })
            .collect();
        let bounded = !captures.is_empty();
        let captures_receiver = captures.iter().any(|capture| {
            capture.params.iter().any(|param| match param {
                syn::CapturedParam::Lifetime(lifetime) => {
                    lifetime.ident == "_" || Some(lifetime) == own
                }
                _ => false,
            })
        });
        let captures = bounded && !captures_receiver;
        // A boxed `dyn Future` without a lifetime is `'static`.
        let implicit_static = flavor == Flavor::BoxedFuture && lifetimes.is_empty();
        let outlives = Outlives::of(sig, outer);
        // A lifetime bound the receiver's borrow is not known to outlive:
        // `'static`, or an argument's lifetime. (`'_` is the receiver's.)
        let foreign = |lifetime: &&Lifetime| {
            lifetime.ident != "_" && !own.is_some_and(|own| outlives.lifetime(own, lifetime))
        };
        // A lifetime bound some argument is not known to outlive.
        let shorter = |lifetime: &&Lifetime| {
            sig.inputs.iter().any(|input| match input {
                FnArg::Typed(typed) => !outlives.ty(&typed.ty, lifetime),
                FnArg::Receiver(_) => false,
            })
        };
        let trait_bound = |name: &str| {
            bounds.iter().find(|bound| match bound {
                TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| s.ident == name),
                _ => false,
            })
        };
        Returns {
            detached: captures || implicit_static || lifetimes.iter().any(foreign),
            outlives: bounded || implicit_static || lifetimes.iter().any(shorter),
            send: trait_bound("Send").map(ToTokens::to_token_stream),
            unpin: trait_bound("Unpin").map(ToTokens::to_token_stream),
            other_bound: bounds
                .iter()
                .find(|bound| match bound {
                    TypeParamBound::Trait(t) => t.path.segments.last().is_none_or(|last| {
                        !["Future", "Send", "Unpin"]
                            .iter()
                            .any(|name| last.ident == name)
                    }),
                    TypeParamBound::Lifetime(_) | TypeParamBound::PreciseCapture(_) => false,
                    _ => true,
                })
                .map(ToTokens::to_token_stream),
            flavor,
            is_result: is_result(&output),
            value: output,
            written,
        }
    }
}

/// Whether `ty` can be a `Result`: a tuple, reference, array and the like
/// cannot, while a path may be one or an alias of one, and a type macro
/// may expand to one.
pub(super) fn is_result(ty: &Type) -> bool {
    matches!(strip(ty), Type::Path(_) | Type::Macro(_))
}

/// The bounds and the `Output` of `impl Future<Output = T> + ...`.
pub(super) fn impl_future(ty: &Type) -> Option<(Bounds, Type)> {
    match strip(ty) {
        Type::ImplTrait(imp) => {
            let output = future_output(imp.bounds.iter())?;
            Some((imp.bounds.iter().cloned().collect(), output))
        }
        _ => None,
    }
}

/// The bounds and the `Output` of `Pin<Box<dyn Future<Output = T> + ...>>`.
pub(super) fn boxed_future(ty: &Type) -> Option<(Bounds, Type)> {
    let pinned = single_type_argument(ty, "Pin")?;
    let boxed = single_type_argument(pinned, "Box")?;
    match strip(boxed) {
        Type::TraitObject(object) => {
            let output = future_output(object.bounds.iter())?;
            Some((object.bounds.iter().cloned().collect(), output))
        }
        _ => None,
    }
}

/// The only type argument of `ty` if its path ends in `name<...>`.
pub(super) fn single_type_argument<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let Type::Path(path) = strip(ty) else {
        return None;
    };
    let segment = path.path.segments.last()?;
    if segment.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &segment.arguments else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    let first = types.next()?;
    types.next().is_none().then_some(first)
}

pub(super) fn future_output<'a>(bounds: impl Iterator<Item = &'a TypeParamBound>) -> Option<Type> {
    for bound in bounds {
        let TypeParamBound::Trait(bound) = bound else {
            continue;
        };
        let Some(segment) = bound.path.segments.last() else {
            continue;
        };
        if segment.ident != "Future" {
            continue;
        }
        let PathArguments::AngleBracketed(args) = &segment.arguments else {
            continue;
        };
        for arg in &args.args {
            if let GenericArgument::AssocType(assoc) = arg
                && assoc.ident == "Output"
            {
                return Some(assoc.ty.clone());
            }
        }
    }
    None
}
