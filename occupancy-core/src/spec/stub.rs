//! The items `#[occupancy::kernel]` can sit on, and which kernels each declares.
//!
//! Shared by the proc macro (which re-emits the item and adds a const per kernel) and by the
//! source scanner, so both accept the same items and derive the same names.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use serde::{Deserialize, Serialize};
use syn::spanned::Spanned;

use super::grammar::{self, KeyOccurrence};
use super::{KernelSpec, DOCS_PATH};

/// How a kernel's Rust stub is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StubKind {
    /// A Rust fn with a body: a launch wrapper for a PTX kernel loaded by name, an
    /// `extern "C" fn` definition, or a Rust-CUDA `#[kernel]` fn. Kept as written.
    Function,
    /// `fn saxpy(...);`: a signature standing for a PTX kernel loaded by name. Not valid Rust on
    /// its own, so the macro replaces it by the declaration const.
    BodylessFunction,
    /// The attribute, with arguments, on an `extern "C" { ... }` block holding one fn.
    ExternBlock,
    /// A fn inside an `extern "C" { ... }` block marked with a bare `#[occupancy::kernel]`,
    /// carrying its own `#[occupancy::kernel(...)]`.
    ForeignFunction,
}

/// An item the attribute was put on, classified.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum KernelStub {
    /// See [`StubKind::Function`].
    Function(syn::ItemFn),
    /// See [`StubKind::BodylessFunction`].
    BodylessFunction(syn::ForeignItemFn),
    /// An `extern "ABI" { ... }` block: see [`StubKind::ExternBlock`] and [`StubKind::ForeignFunction`].
    ExternBlock(syn::ItemForeignMod),
}

/// One kernel declared by an attribute.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StubKernel {
    /// How the stub is written.
    pub kind: StubKind,
    /// The Rust item's identifier (raw prefix kept, as written).
    pub ident: syn::Ident,
    /// The Rust item's visibility, given to the generated const.
    pub visibility: syn::Visibility,
    /// The declaration.
    pub spec: KernelSpec,
    /// The compiled kernel's symbol: `name = "..."`, else `#[link_name]`/`#[export_name]`,
    /// else the Rust name; for a family (`family = "affine_*"`), the pattern.
    pub kernel_name: String,
    /// The attribute that declares this kernel: the macro's own (`Span::call_site()`), or for
    /// [`StubKind::ForeignFunction`] the declaration on the fn inside the block.
    pub attribute_span: Span,
}

impl StubKernel {
    /// The Rust item's name without a raw prefix (`r#type` → `type`).
    pub fn rust_name(&self) -> String {
        syn::ext::IdentExt::unraw(&self.ident).to_string()
    }

    /// The name of the const the macro generates beside the item: the Rust name in upper case
    /// followed by `_OCCUPANCY` (`saxpy` → `SAXPY_OCCUPANCY`).
    pub fn const_name(&self) -> String {
        declaration_const_name(&self.rust_name())
    }
}

/// `saxpy` → `SAXPY_OCCUPANCY`: the const generated for a kernel stub named `rust_name`.
pub fn declaration_const_name(rust_name: &str) -> String {
    format!("{}_OCCUPANCY", rust_name.to_uppercase())
}

/// A kernel with where its declaration was written, for the scanner.
#[derive(Debug)]
pub(crate) struct ResolvedKernel {
    pub kernel: StubKernel,
    pub keys: Vec<KeyOccurrence>,
    pub attribute_span: Span,
}

/// What the macro emits in place of the item, and the kernels it declares.
#[derive(Debug)]
pub(crate) struct Resolution {
    pub item: Option<TokenStream>,
    pub kernels: Vec<ResolvedKernel>,
}

fn docs_link(anchor: &str) -> String {
    format!("{DOCS_PATH}#{anchor}")
}

impl KernelStub {
    /// Classifies the item tokens an attribute macro receives.
    pub fn parse(item: TokenStream) -> syn::Result<KernelStub> {
        let item: syn::Item = syn::parse2(item)?;
        KernelStub::from_item(item)
    }

    /// Classifies a parsed item (the scanner's entry point).
    pub fn from_item(item: syn::Item) -> syn::Result<KernelStub> {
        match item {
            syn::Item::Fn(function) => Ok(KernelStub::Function(function)),
            syn::Item::ForeignMod(block) => Ok(KernelStub::ExternBlock(block)),
            syn::Item::Verbatim(tokens) => {
                match syn::parse2::<syn::ForeignItemFn>(tokens.clone()) {
                    Ok(function) => {
                        if let Some(abi) = &function.sig.abi {
                            return Err(syn::Error::new_spanned(
                            abi,
                            format!(
                                "a body-less `extern` fn is not a declaration Rust accepts at module level: \
                                 put it inside an `unsafe extern \"C\" {{ ... }}` block and the attribute on the block (see {})",
                                docs_link("extern-c-declarations")
                            ),
                        ));
                        }
                        Ok(KernelStub::BodylessFunction(function))
                    }
                    Err(_) => Err(unsupported(tokens)),
                }
            }
            other => Err(unsupported(other.into_token_stream())),
        }
    }

    /// Parses `args` (the attribute's arguments) against this item and returns what the macro
    /// emits in place of the item and the kernels declared. `attribute_span` is where errors
    /// about the attribute as a whole point.
    pub(crate) fn resolve(
        self,
        args: TokenStream,
        attribute_span: Span,
    ) -> syn::Result<Resolution> {
        match self {
            KernelStub::Function(function) => resolve_function(
                StubKind::Function,
                &function.sig,
                &function.vis,
                &function.attrs,
                Some(function.to_token_stream()),
                args,
                attribute_span,
            ),
            // A body-less fn is not valid Rust on its own: the declaration's const replaces it.
            KernelStub::BodylessFunction(function) => resolve_function(
                StubKind::BodylessFunction,
                &function.sig,
                &function.vis,
                &function.attrs,
                None,
                args,
                attribute_span,
            ),
            KernelStub::ExternBlock(block) => resolve_extern_block(block, args, attribute_span),
        }
    }

    /// Parses `args` against this item: the kernels declared and the tokens to emit in place of
    /// the item (`None` for a body-less fn). The macro's entry point.
    pub fn declare(self, args: TokenStream) -> syn::Result<(Option<TokenStream>, Vec<StubKernel>)> {
        let resolution = self.resolve(args, Span::call_site())?;
        Ok((
            resolution.item,
            resolution
                .kernels
                .into_iter()
                .map(|resolved| resolved.kernel)
                .collect(),
        ))
    }
}

fn unsupported(tokens: TokenStream) -> syn::Error {
    syn::Error::new_spanned(
        tokens,
        format!(
            "#[occupancy::kernel] goes on the Rust stub of a kernel: a fn, a body-less `fn name(...);`, \
             or an `extern \"C\" {{ ... }}` block (see {})",
            docs_link("stub-styles")
        ),
    )
}

/// Is this attribute `#[occupancy::kernel]` written with the crate's path?
pub(crate) fn is_full_path_attribute(path: &syn::Path) -> bool {
    let segments: Vec<String> = path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    segments == ["occupancy", "kernel"]
}

/// Inside an extern block marked `#[occupancy::kernel]`, these attributes declare a kernel.
pub(crate) fn is_inner_attribute(path: &syn::Path) -> bool {
    is_full_path_attribute(path) || path.is_ident("kernel")
}

fn reject_second_attribute(attrs: &[syn::Attribute]) -> syn::Result<()> {
    match attrs.iter().find(|attr| is_full_path_attribute(attr.path())) {
        Some(second) => Err(syn::Error::new_spanned(
            second,
            "this kernel is already declared by an #[occupancy::kernel] above: merge the two into one attribute",
        )),
        None => Ok(()),
    }
}

pub(crate) fn attribute_args(attr: &syn::Attribute) -> syn::Result<TokenStream> {
    match &attr.meta {
        syn::Meta::Path(_) => Ok(TokenStream::new()),
        syn::Meta::List(list) => Ok(list.tokens.clone()),
        syn::Meta::NameValue(name_value) => Err(syn::Error::new_spanned(
            name_value,
            format!("write the declaration in parentheses: `#[occupancy::kernel(block = 256)]` (see {})", docs_link("keys")),
        )),
    }
}

fn symbol_name(spec: &KernelSpec, ident: &syn::Ident, attrs: &[syn::Attribute]) -> String {
    if let Some(name) = spec.family.as_ref().or(spec.name.as_ref()) {
        return name.clone();
    }
    for attr in attrs {
        if attr.path().is_ident("link_name") || attr.path().is_ident("export_name") {
            if let syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(symbol),
                        ..
                    }),
                ..
            }) = &attr.meta
            {
                return symbol.value();
            }
        }
    }
    syn::ext::IdentExt::unraw(ident).to_string()
}

/// One fn stub (with or without a body): its declaration, and the tokens kept in its place.
fn resolve_function(
    kind: StubKind,
    signature: &syn::Signature,
    visibility: &syn::Visibility,
    attrs: &[syn::Attribute],
    item: Option<TokenStream>,
    args: TokenStream,
    attribute_span: Span,
) -> syn::Result<Resolution> {
    reject_second_attribute(attrs)?;
    let parsed = grammar::parse_spec(args, attribute_span)?;
    let kernel_name = symbol_name(&parsed.spec, &signature.ident, attrs);
    let kernel = StubKernel {
        kind,
        ident: signature.ident.clone(),
        visibility: visibility.clone(),
        spec: parsed.spec,
        kernel_name,
        attribute_span,
    };
    Ok(Resolution {
        item,
        kernels: vec![ResolvedKernel {
            kernel,
            keys: parsed.keys,
            attribute_span,
        }],
    })
}

/// An `#[occupancy::kernel]` on an `extern "C"` block: with arguments it declares the block's
/// one fn; bare, each fn inside declares itself with its own `#[occupancy::kernel(...)]`.
fn resolve_extern_block(
    block: syn::ItemForeignMod,
    args: TokenStream,
    attribute_span: Span,
) -> syn::Result<Resolution> {
    if let Some(second) = block
        .attrs
        .iter()
        .find(|attr| is_full_path_attribute(attr.path()))
    {
        return Err(syn::Error::new_spanned(
            second,
            format!(
                "this extern block already carries an #[occupancy::kernel] above: keep one (see {})",
                docs_link("extern-c-declarations")
            ),
        ));
    }
    if args.is_empty() {
        resolve_bare_extern_block(block, attribute_span)
    } else {
        resolve_extern_block_fn(block, args, attribute_span)
    }
}

/// `#[occupancy::kernel(...)]` on an extern block: one declaration for the block's one fn.
fn resolve_extern_block_fn(
    block: syn::ItemForeignMod,
    args: TokenStream,
    attribute_span: Span,
) -> syn::Result<Resolution> {
    let function_count = block
        .items
        .iter()
        .filter(|item| matches!(item, syn::ForeignItem::Fn(_)))
        .count();
    let mut functions = block.items.iter().filter_map(|item| match item {
        syn::ForeignItem::Fn(function) => Some(function),
        _ => None,
    });
    let Some(function) = functions.next() else {
        return Err(syn::Error::new(
            attribute_span,
            format!(
                "this extern block declares no fn: #[occupancy::kernel(...)] on a block declares its one fn (see {})",
                docs_link("extern-c-declarations")
            ),
        ));
    };
    if let Some(second) = functions.next() {
        return Err(syn::Error::new_spanned(
            &second.sig.ident,
            format!(
                "#[occupancy::kernel(...)] on an extern block declares its one fn, but this block has {function_count}: \
                 split the block, or write a bare #[occupancy::kernel] on the block and an \
                 #[occupancy::kernel(...)] on each kernel fn inside (see {})",
                docs_link("extern-c-declarations")
            ),
        ));
    }
    if let Some(inner) = function
        .attrs
        .iter()
        .find(|attr| is_inner_attribute(attr.path()))
    {
        return Err(syn::Error::new_spanned(
            inner,
            format!(
                "the block's #[occupancy::kernel(...)] already declares this fn: keep one of the two (see {})",
                docs_link("extern-c-declarations")
            ),
        ));
    }
    let parsed = grammar::parse_spec(args, attribute_span)?;
    let kernel = StubKernel {
        kind: StubKind::ExternBlock,
        ident: function.sig.ident.clone(),
        visibility: function.vis.clone(),
        kernel_name: symbol_name(&parsed.spec, &function.sig.ident, &function.attrs),
        spec: parsed.spec,
        attribute_span,
    };
    Ok(Resolution {
        item: Some(block.into_token_stream()),
        kernels: vec![ResolvedKernel {
            kernel,
            keys: parsed.keys,
            attribute_span,
        }],
    })
}

/// A bare `#[occupancy::kernel]` on an extern block: each fn inside declares itself; the
/// attributes are taken off the fns, every fn's errors are reported together.
fn resolve_bare_extern_block(
    mut block: syn::ItemForeignMod,
    attribute_span: Span,
) -> syn::Result<Resolution> {
    let mut kernels = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for item in &mut block.items {
        let syn::ForeignItem::Fn(function) = item else {
            continue;
        };
        match resolve_foreign_fn(function) {
            None => {}
            Some(Ok(resolved)) => kernels.push(resolved),
            Some(Err(error)) => match &mut errors {
                Some(errors) => errors.combine(error),
                None => errors = Some(error),
            },
        }
    }
    if let Some(errors) = errors {
        return Err(errors);
    }
    if kernels.is_empty() {
        return Err(syn::Error::new(
            attribute_span,
            format!(
                "a bare #[occupancy::kernel] on an extern block needs an #[occupancy::kernel(...)] on each kernel fn inside; \
                 none has one: add them, or put the arguments on the block when it holds one fn (see {})",
                docs_link("extern-c-declarations")
            ),
        ));
    }
    Ok(Resolution {
        item: Some(block.into_token_stream()),
        kernels,
    })
}

/// The declaration of one fn inside a bare-attributed extern block, its
/// `#[occupancy::kernel(...)]` taken off it; `None` when it has none.
fn resolve_foreign_fn(function: &mut syn::ForeignItemFn) -> Option<syn::Result<ResolvedKernel>> {
    let mut declarations = Vec::new();
    function.attrs.retain(|attr| {
        let ours = is_inner_attribute(attr.path());
        if ours {
            declarations.push(attr.clone());
        }
        !ours
    });
    let mut declarations = declarations.into_iter();
    let declaration = declarations.next()?;
    if let Some(second) = declarations.next() {
        return Some(Err(syn::Error::new_spanned(
            second,
            "this fn is already declared by an #[occupancy::kernel(...)] above: merge the two into one attribute",
        )));
    }
    let resolved = attribute_args(&declaration).and_then(|args| {
        let span = declaration.span();
        let parsed = grammar::parse_spec(args, span)?;
        Ok(ResolvedKernel {
            kernel: StubKernel {
                kind: StubKind::ForeignFunction,
                ident: function.sig.ident.clone(),
                visibility: function.vis.clone(),
                kernel_name: symbol_name(&parsed.spec, &function.sig.ident, &function.attrs),
                spec: parsed.spec,
                attribute_span: span,
            },
            keys: parsed.keys,
            attribute_span: span,
        })
    });
    Some(resolved)
}
