//! What a method's signature says about lifetimes ([`Outlives`]): which
//! lifetime outlives which (`'a: 'b` in its generics and where clauses,
//! followed transitively), which type parameter (or `Self`) outlives which
//! lifetime (`T: 'b`), and so whether a type is known to outlive a
//! lifetime. A future bound by a lifetime may hold the receiver and the
//! arguments until it has a slot only where they outlive that lifetime.
//!
//! `#[async_trait]` writes its futures that way: `Pin<Box<dyn Future<..> +
//! Send + 'async_trait>>`, every elided lifetime named (`&'life0 self`,
//! `&'life1 str`) and declared to outlive `'async_trait`, and `Self:
//! 'async_trait`; so does a hand-written `fn get<'a>(&'a self, key: &'a
//! str) -> Pin<Box<dyn Future<..> + Send + 'a>>`.

use std::collections::HashSet;

use syn::{
    GenericArgument, GenericParam, Generics, Lifetime, PathArguments, ReturnType, Signature, Type,
    TypeParamBound, TypePath, WherePredicate,
};

use crate::tokens::strip;

/// The outlives relations a signature and its trait's generics declare.
pub(crate) struct Outlives {
    /// `(a, b)` for `'a: 'b`, by the lifetimes' names.
    lifetimes: Vec<(String, String)>,
    /// `(T, b)` for `T: 'b`, `T` a type parameter or `Self`.
    types: Vec<(String, String)>,
    /// The type parameters in scope: the method's and the trait's.
    params: HashSet<String>,
    /// Whether the trait has type parameters, on which the associated types
    /// of `Self` may depend.
    outer_params: bool,
}

impl Outlives {
    /// The relations `sig` declares, in the scope of the trait's `outer`
    /// generics.
    pub(crate) fn of(sig: &Signature, outer: &Generics) -> Self {
        let mut outlives = Outlives {
            lifetimes: Vec::new(),
            types: Vec::new(),
            params: HashSet::new(),
            outer_params: outer.type_params().next().is_some(),
        };
        outlives.read(outer);
        outlives.read(&sig.generics);
        outlives
    }

    fn read(&mut self, generics: &Generics) {
        for param in &generics.params {
            match param {
                GenericParam::Lifetime(param) => {
                    let name = param.lifetime.ident.to_string();
                    for bound in &param.bounds {
                        self.lifetimes.push((name.clone(), bound.ident.to_string()));
                    }
                }
                GenericParam::Type(param) => {
                    let name = param.ident.to_string();
                    self.params.insert(name.clone());
                    self.type_bounds(&name, &param.bounds);
                }
                GenericParam::Const(_) => {}
            }
        }
        for predicate in generics.where_clause.iter().flat_map(|w| &w.predicates) {
            match predicate {
                WherePredicate::Lifetime(p) => {
                    let name = p.lifetime.ident.to_string();
                    for bound in &p.bounds {
                        self.lifetimes.push((name.clone(), bound.ident.to_string()));
                    }
                }
                WherePredicate::Type(p) => {
                    if let Type::Path(path) = strip(&p.bounded_ty)
                        && path.qself.is_none()
                        && let Some(ident) = path.path.get_ident()
                    {
                        self.type_bounds(&ident.to_string(), &p.bounds);
                    }
                }
                _ => {}
            }
        }
    }

    fn type_bounds<'a>(
        &mut self,
        name: &str,
        bounds: impl IntoIterator<Item = &'a TypeParamBound>,
    ) {
        for bound in bounds {
            if let TypeParamBound::Lifetime(lifetime) = bound {
                self.types
                    .push((name.to_owned(), lifetime.ident.to_string()));
            }
        }
    }

    /// Whether `a` is known to outlive `b`: it is `b` (and named: two
    /// elided lifetimes may differ), `'static`, or declared to, directly or
    /// through other lifetimes.
    pub(crate) fn lifetime(&self, a: &Lifetime, b: &Lifetime) -> bool {
        self.named(&a.ident.to_string(), &b.ident.to_string())
    }

    fn named(&self, a: &str, b: &str) -> bool {
        if a == "static" || (a == b && a != "_") {
            return true;
        }
        let mut seen = vec![a.to_owned()];
        let mut i = 0;
        while i < seen.len() {
            for (shorter, longer) in &self.lifetimes {
                // `'x: 'y`: what `'x` outlives, `'y` ...
                if *shorter == seen[i] {
                    if longer == b {
                        return true;
                    }
                    if !seen.contains(longer) {
                        seen.push(longer.clone());
                    }
                }
            }
            i += 1;
        }
        false
    }

    /// Whether the type parameter (or `Self`) `name` is declared to outlive
    /// `b`, or `'static`.
    fn param(&self, name: &str, b: &str) -> bool {
        self.types
            .iter()
            .any(|(param, bound)| param == name && self.named(bound, b))
    }

    /// Whether every borrow `ty` may hold is known to outlive `b`: each
    /// lifetime in it does (an elided one never is), each type parameter is
    /// declared to, and `Self` too for an associated type of `Self` (of a
    /// trait without type parameters). Conservative: a type it cannot read
    /// (`impl Trait` without a lifetime bound, a function pointer, a macro)
    /// is not.
    pub(crate) fn ty(&self, ty: &Type, b: &Lifetime) -> bool {
        let name = b.ident.to_string();
        self.outlives(ty, &name)
    }

    fn outlives(&self, ty: &Type, b: &str) -> bool {
        match strip(ty) {
            Type::Reference(reference) => {
                reference
                    .lifetime
                    .as_ref()
                    .is_some_and(|lifetime| self.named(&lifetime.ident.to_string(), b))
                    && self.outlives(&reference.elem, b)
            }
            Type::Path(path) => self.path(path, b),
            Type::Tuple(tuple) => tuple.elems.iter().all(|elem| self.outlives(elem, b)),
            Type::Array(array) => self.outlives(&array.elem, b),
            Type::Slice(slice) => self.outlives(&slice.elem, b),
            Type::Ptr(ptr) => self.outlives(&ptr.elem, b),
            Type::Never(_) => true,
            // `dyn Trait` without a lifetime is bound by the reference
            // around it (checked there) or `'static` in a box.
            Type::TraitObject(object) => object.bounds.iter().all(|bound| self.bound(bound, b)),
            // `impl Trait` (as `#[async_trait]` bounds it: `impl
            // 'async_trait + Trait`): only with a lifetime bound.
            Type::ImplTrait(imp) => imp.bounds.iter().any(|bound| {
                matches!(bound, TypeParamBound::Lifetime(l) if self.named(&l.ident.to_string(), b))
            }),
            _ => false,
        }
    }

    fn bound(&self, bound: &TypeParamBound, b: &str) -> bool {
        match bound {
            TypeParamBound::Lifetime(lifetime) => self.named(&lifetime.ident.to_string(), b),
            TypeParamBound::Trait(t) => t
                .path
                .segments
                .iter()
                .all(|s| self.arguments(&s.arguments, b)),
            _ => false,
        }
    }

    fn path(&self, path: &TypePath, b: &str) -> bool {
        let arguments = |path: &syn::Path| {
            path.segments
                .iter()
                .all(|segment| self.arguments(&segment.arguments, b))
        };
        if let Some(qself) = &path.qself {
            // `<Self as Trait>::Item`: as `Self::Item`.
            return self.projection(&qself.ty, b) && arguments(&path.path);
        }
        let Some(first) = path.path.segments.first() else {
            return false;
        };
        let name = first.ident.to_string();
        if name == "Self" {
            return self.param("Self", b) && !self.outer_params && arguments(&path.path);
        }
        if path.path.leading_colon.is_none() && self.params.contains(&name) {
            // `T`, or `T::Item`, which outlives what `T` does when `T`'s
            // trait has no parameters (not known here): only `T` itself.
            return path.path.segments.len() == 1 && self.param(&name, b) && arguments(&path.path);
        }
        arguments(&path.path)
    }

    fn projection(&self, qself: &Type, b: &str) -> bool {
        match strip(qself) {
            Type::Path(path) if path.qself.is_none() && path.path.is_ident("Self") => {
                self.param("Self", b) && !self.outer_params
            }
            _ => false,
        }
    }

    fn arguments(&self, arguments: &PathArguments, b: &str) -> bool {
        match arguments {
            PathArguments::None => true,
            PathArguments::AngleBracketed(args) => args.args.iter().all(|arg| match arg {
                GenericArgument::Lifetime(lifetime) => self.named(&lifetime.ident.to_string(), b),
                GenericArgument::Type(ty) => self.outlives(ty, b),
                GenericArgument::AssocType(assoc) => self.outlives(&assoc.ty, b),
                GenericArgument::Const(_) | GenericArgument::AssocConst(_) => true,
                _ => false,
            }),
            PathArguments::Parenthesized(args) => {
                args.inputs.iter().all(|input| self.outlives(&input.ty, b))
                    && match &args.output {
                        ReturnType::Default => true,
                        ReturnType::Type(_, ty) => self.outlives(ty, b),
                    }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn relations(sig: Signature) -> Outlives {
        Outlives::of(&sig, &Generics::default())
    }

    #[test]
    fn declared_lifetimes_outlive_transitively() {
        let sig: Signature = parse_quote!(
            fn f<'a: 'b, 'b, 'c>(&'a self) where 'b: 'c
        );
        let outlives = relations(sig);
        let (a, c): (Lifetime, Lifetime) = (parse_quote!('a), parse_quote!('c));
        assert!(outlives.lifetime(&a, &c));
        assert!(!outlives.lifetime(&c, &a));
        assert!(outlives.lifetime(&parse_quote!('static), &c));
        let elided: Lifetime = parse_quote!('_);
        assert!(
            !outlives.lifetime(&elided, &elided),
            "two elided lifetimes may differ"
        );
    }

    #[test]
    fn async_trait_signatures_hold_every_argument() {
        // What `#[async_trait]` makes of `async fn get<T: Clone>(&self, key:
        // &str, all: Vec<&str>, item: T, id: Self::Id) -> R`.
        let sig: Signature = parse_quote!(
            fn get<'life0, 'life1, 'life2, 'async_trait, T>(
                &'life0 self,
                key: &'life1 str,
                all: Vec<&'life2 str>,
                item: T,
                id: Self::Id,
                owned: String,
            ) -> Pin<Box<dyn Future<Output = R> + Send + 'async_trait>>
            where
                T: 'async_trait + Clone,
                'life0: 'async_trait,
                'life1: 'async_trait,
                'life2: 'async_trait,
                Self: 'async_trait
        );
        let outlives = relations(sig.clone());
        let bound: Lifetime = parse_quote!('async_trait);
        for input in sig.inputs.iter().skip(1) {
            let syn::FnArg::Typed(typed) = input else {
                unreachable!()
            };
            assert!(outlives.ty(&typed.ty, &bound), "{:?}", typed.ty);
        }
    }

    #[test]
    fn elided_and_undeclared_borrows_may_not_outlive() {
        let sig: Signature = parse_quote!(fn f<'a, T>(&'a self, t: T));
        let outlives = relations(sig);
        let a: Lifetime = parse_quote!('a);
        let no = |ty: Type| assert!(!outlives.ty(&ty, &a), "{ty:?}");
        no(parse_quote!(&str));
        no(parse_quote!(Cow<'_, str>));
        no(parse_quote!(T));
        no(parse_quote!(Self::Item));
        no(parse_quote!(impl AsRef<str>));
        no(parse_quote!(fn(&str)));
        let yes = |ty: Type| assert!(outlives.ty(&ty, &a), "{ty:?}");
        yes(parse_quote!(&'a str));
        yes(parse_quote!(String));
        yes(parse_quote!(Box<dyn Fn() + Send>));
        yes(parse_quote!(&'static [u8]));
        yes(parse_quote!((u8, Option<&'a str>)));
    }

    #[test]
    fn a_trait_parameter_is_not_known_to_outlive() {
        let outer: Generics = parse_quote!(<K>);
        let sig: Signature = parse_quote!(fn f<'a>(&'a self, key: K) where Self: 'a);
        let outlives = Outlives::of(&sig, &outer);
        let a: Lifetime = parse_quote!('a);
        assert!(!outlives.ty(&parse_quote!(K), &a));
        assert!(
            !outlives.ty(&parse_quote!(Self::Item), &a),
            "`Self::Item` may name `K`"
        );
    }
}
