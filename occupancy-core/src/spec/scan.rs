//! Finding declarations in Rust source text, for the build helper.
//!
//! The build helper runs before the crate compiles, so it reads `#[occupancy::kernel(...)]`
//! out of the .rs files itself, with the same grammar and item rules as the macro
//! ([`super::grammar`], [`super::stub`]), and keeps line/column spans so its diagnostics can
//! point at the attribute and at each key.

use std::collections::BTreeSet;
use std::fmt;

use proc_macro2::Span;
use serde::{Deserialize, Serialize};
use syn::spanned::Spanned;

use super::grammar::KeyOccurrence;
use super::stub::{
    attribute_args, is_full_path_attribute, is_inner_attribute, KernelStub, ResolvedKernel,
    StubKind,
};
use super::{KernelSpec, SpecKey, DOCS_PATH};

/// A position in a source file, both 1-based (as rustc prints them); columns count characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LineColumn {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// A range in a source file; `end` is exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SourceSpan {
    /// Where the range starts.
    pub start: LineColumn,
    /// Just past its last character.
    pub end: LineColumn,
}

impl SourceSpan {
    fn between(start: Span, end: Span) -> SourceSpan {
        let start = start.start();
        let end = end.end();
        SourceSpan {
            start: LineColumn {
                line: start.line,
                column: start.column + 1,
            },
            end: LineColumn {
                line: end.line,
                column: end.column + 1,
            },
        }
    }

    fn of(span: Span) -> SourceSpan {
        SourceSpan::between(span, span)
    }
}

impl fmt::Display for SourceSpan {
    /// `line:column` of the start, as in `src/lib.rs:12:5`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}", self.start.line, self.start.column)
    }
}

/// Where one key of a declaration was written (from the key to the end of its value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KeySpan {
    /// The key.
    pub key: SpecKey,
    /// Its location.
    pub span: SourceSpan,
}

/// A kernel declared in a source file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DeclaredKernel {
    /// The declaration.
    pub spec: KernelSpec,
    /// The Rust item's name (the fn, without a raw prefix).
    pub rust_name: String,
    /// The compiled kernel's symbol: `name = "..."`, else `#[link_name]`/`#[export_name]`, else
    /// the Rust name; for a family (`family = "affine_*"`), the pattern.
    pub kernel_name: String,
    /// The const the macro generates beside the item, e.g. `SAXPY_OCCUPANCY`.
    pub const_name: String,
    /// How the stub is written.
    pub stub: StubKind,
    /// The inline modules the item sits in, outermost first (empty at the file's top level).
    pub module_path: Vec<String>,
    /// The whole attribute, `#` to `]`.
    pub attribute: SourceSpan,
    /// Each key written, in order.
    pub keys: Vec<KeySpan>,
}

impl DeclaredKernel {
    /// Where `key` was written, if it was.
    pub fn key_span(&self, key: impl Into<SpecKey>) -> Option<SourceSpan> {
        let key = key.into();
        self.keys
            .iter()
            .find(|written| written.key == key)
            .map(|written| written.span)
    }

    /// Where `key` was written, else the attribute: where a diagnostic about `key` points.
    pub fn span_for(&self, key: impl Into<SpecKey>) -> SourceSpan {
        self.key_span(key).unwrap_or(self.attribute)
    }
}

/// One problem found while scanning: the message the macro gives for the same mistake.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SpecDiagnostic {
    /// What is wrong and what to edit.
    pub message: String,
    /// Where.
    pub span: SourceSpan,
}

/// The file is not valid Rust, or a declaration in it is invalid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ScanError {
    /// Every problem found, in source order.
    pub diagnostics: Vec<SpecDiagnostic>,
}

impl fmt::Display for ScanError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, diagnostic) in self.diagnostics.iter().enumerate() {
            if index > 0 {
                formatter.write_str("\n")?;
            }
            write!(formatter, "{}: {}", diagnostic.span, diagnostic.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ScanError {}

impl ScanError {
    fn from_syn(error: syn::Error) -> Vec<SpecDiagnostic> {
        error
            .into_iter()
            .map(|single| SpecDiagnostic {
                message: single.to_string(),
                span: SourceSpan::of(single.span()),
            })
            .collect()
    }
}

/// Finds every `#[occupancy::kernel(...)]` in a Rust source file: on fns, body-less fns and
/// extern blocks, at the top level and in inline modules. `#[kernel(...)]` counts where the
/// module imports it (`use occupancy::kernel;`, `use occupancy::{kernel, ...};`,
/// `use occupancy::kernel as name;`, `use occupancy::*;`).
///
/// Errors are the ones the macro reports for the same attribute, with locations; a file that
/// is not valid Rust is an error too (the build would fail anyway, and nothing in it could be
/// checked).
pub fn scan_source(file_text: &str) -> Result<Vec<DeclaredKernel>, ScanError> {
    let text = file_text.strip_prefix('\u{feff}').unwrap_or(file_text);
    let file = syn::parse_file(text).map_err(|error| ScanError {
        diagnostics: ScanError::from_syn(error),
    })?;
    let mut scanner = Scanner {
        kernels: Vec::new(),
        diagnostics: Vec::new(),
    };
    scanner.module(&file.items, &mut Vec::new());
    if scanner.diagnostics.is_empty() {
        Ok(scanner.kernels)
    } else {
        scanner
            .diagnostics
            .sort_by_key(|diagnostic| diagnostic.span.start);
        Err(ScanError {
            diagnostics: scanner.diagnostics,
        })
    }
}

struct Scanner {
    kernels: Vec<DeclaredKernel>,
    diagnostics: Vec<SpecDiagnostic>,
}

impl Scanner {
    fn module(&mut self, items: &[syn::Item], module_path: &mut Vec<String>) {
        let local_names = imported_names(items);
        let is_ours = |path: &syn::Path| {
            is_full_path_attribute(path)
                || path
                    .get_ident()
                    .is_some_and(|ident| local_names.contains(&ident.to_string()))
        };
        for item in items {
            if let syn::Item::Mod(module) = item {
                if let Some((_, content)) = &module.content {
                    if let Some(attr) = module.attrs.iter().find(|attr| is_ours(attr.path())) {
                        self.unsupported(attr);
                    }
                    module_path.push(syn::ext::IdentExt::unraw(&module.ident).to_string());
                    self.module(content, module_path);
                    module_path.pop();
                    continue;
                }
            }
            self.unreachable_declarations(item, &is_ours);
            let attrs = item_attrs(item);
            if let syn::Item::ForeignMod(block) = item {
                if !attrs.iter().any(|attr| is_ours(attr.path())) {
                    self.undeclared_block(block);
                    continue;
                }
            }
            let Some(position) = attrs.iter().position(|attr| is_ours(attr.path())) else {
                continue;
            };
            self.declaration(&attrs[position], without_attr(item, position), module_path);
        }
    }

    /// Declarations on methods (impl and trait items) and on items inside fn bodies would
    /// compile but are out of the build helper's reach, so they would go unchecked: fail closed.
    fn unreachable_declarations(&mut self, item: &syn::Item, is_ours: &dyn Fn(&syn::Path) -> bool) {
        let mut report = |attrs: &[syn::Attribute], place: &str| {
            if let Some(attr) = attrs.iter().find(|attr| is_ours(attr.path())) {
                self.diagnostics.push(SpecDiagnostic {
                    message: format!(
                        "#[occupancy::kernel] {place} is out of the build helper's reach, so this kernel would go unchecked: \
                         declare it on a module-level fn, body-less fn or extern block (see {DOCS_PATH}#stub-styles)"
                    ),
                    span: SourceSpan::of(attr.span()),
                });
            }
        };
        match item {
            syn::Item::Impl(block) => {
                for impl_item in &block.items {
                    if let syn::ImplItem::Fn(method) = impl_item {
                        report(&method.attrs, "on a method");
                    }
                }
            }
            syn::Item::Trait(definition) => {
                for trait_item in &definition.items {
                    if let syn::TraitItem::Fn(method) = trait_item {
                        report(&method.attrs, "on a trait method");
                    }
                }
            }
            syn::Item::Fn(function) => {
                let mut pending: Vec<&syn::Block> = vec![&function.block];
                while let Some(block) = pending.pop() {
                    for statement in &block.stmts {
                        if let syn::Stmt::Item(nested) = statement {
                            report(&item_attrs(nested), "inside a fn body");
                            if let syn::Item::Fn(nested_function) = nested {
                                pending.push(&nested_function.block);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn declaration(&mut self, attr: &syn::Attribute, item: syn::Item, module_path: &[String]) {
        let outcome = attribute_args(attr).and_then(|args| {
            KernelStub::from_item(item).and_then(|stub| stub.resolve(args, attr.span()))
        });
        match outcome {
            Ok(resolution) => {
                for resolved in resolution.kernels {
                    self.kernels.push(declared(resolved, module_path));
                }
            }
            Err(error) => self.diagnostics.extend(ScanError::from_syn(error)),
        }
    }

    fn unsupported(&mut self, attr: &syn::Attribute) {
        self.diagnostics.push(SpecDiagnostic {
            message: format!(
                "#[occupancy::kernel] goes on the Rust stub of a kernel: a fn, a body-less `fn name(...);`, \
                 or an `extern \"C\" {{ ... }}` block (see {DOCS_PATH}#stub-styles)"
            ),
            span: SourceSpan::of(attr.span()),
        });
    }

    /// Declarations inside an extern block without the bare marker on the block cannot expand
    /// (rustc lets an attribute there produce only foreign items), so the build would fail.
    fn undeclared_block(&mut self, block: &syn::ItemForeignMod) {
        for item in &block.items {
            let syn::ForeignItem::Fn(function) = item else {
                continue;
            };
            if let Some(attr) = function
                .attrs
                .iter()
                .find(|attr| is_inner_attribute(attr.path()))
            {
                if is_full_path_attribute(attr.path()) || attr.meta.require_list().is_ok() {
                    self.diagnostics.push(SpecDiagnostic {
                        message: format!(
                            "an #[occupancy::kernel(...)] inside an extern block needs a bare #[occupancy::kernel] on the block: \
                             add it above `extern` (see {DOCS_PATH}#extern-c-declarations)"
                        ),
                        span: SourceSpan::of(attr.span()),
                    });
                }
            }
        }
    }
}

fn declared(resolved: ResolvedKernel, module_path: &[String]) -> DeclaredKernel {
    let ResolvedKernel {
        kernel,
        keys,
        attribute_span,
    } = resolved;
    DeclaredKernel {
        rust_name: kernel.rust_name(),
        const_name: kernel.const_name(),
        kernel_name: kernel.kernel_name,
        stub: kernel.kind,
        module_path: module_path.to_vec(),
        attribute: SourceSpan::of(attribute_span),
        keys: keys
            .into_iter()
            .map(|KeyOccurrence { key, start, end }| KeySpan {
                key,
                span: SourceSpan::between(start, end),
            })
            .collect(),
        spec: kernel.spec,
    }
}

/// The item's outer attributes; body-less fns, which syn keeps as tokens, are parsed for theirs.
fn item_attrs(item: &syn::Item) -> Vec<syn::Attribute> {
    match item {
        syn::Item::Verbatim(tokens) => syn::parse2::<syn::ForeignItemFn>(tokens.clone())
            .map(|function| function.attrs)
            .unwrap_or_default(),
        syn::Item::Fn(item) => item.attrs.clone(),
        syn::Item::ForeignMod(item) => item.attrs.clone(),
        syn::Item::Const(item) => item.attrs.clone(),
        syn::Item::Enum(item) => item.attrs.clone(),
        syn::Item::ExternCrate(item) => item.attrs.clone(),
        syn::Item::Impl(item) => item.attrs.clone(),
        syn::Item::Macro(item) => item.attrs.clone(),
        syn::Item::Mod(item) => item.attrs.clone(),
        syn::Item::Static(item) => item.attrs.clone(),
        syn::Item::Struct(item) => item.attrs.clone(),
        syn::Item::Trait(item) => item.attrs.clone(),
        syn::Item::TraitAlias(item) => item.attrs.clone(),
        syn::Item::Type(item) => item.attrs.clone(),
        syn::Item::Union(item) => item.attrs.clone(),
        syn::Item::Use(item) => item.attrs.clone(),
        _ => Vec::new(),
    }
}

/// The item as the macro receives it: without the attribute being expanded.
fn without_attr(item: &syn::Item, position: usize) -> syn::Item {
    let mut item = item.clone();
    match &mut item {
        syn::Item::Verbatim(tokens) => {
            if let Ok(mut function) = syn::parse2::<syn::ForeignItemFn>(tokens.clone()) {
                function.attrs.remove(position);
                *tokens = quote::ToTokens::into_token_stream(function);
            }
        }
        syn::Item::Fn(function) => {
            function.attrs.remove(position);
        }
        syn::Item::ForeignMod(block) => {
            block.attrs.remove(position);
        }
        _ => {}
    }
    item
}

/// Names under which this module imports `occupancy::kernel`.
fn imported_names(items: &[syn::Item]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in items {
        if let syn::Item::Use(use_item) = item {
            collect_use(&use_item.tree, &mut Vec::new(), &mut names);
        }
    }
    names
}

fn collect_use(tree: &syn::UseTree, prefix: &mut Vec<String>, names: &mut BTreeSet<String>) {
    let under_occupancy = prefix.len() == 1 && prefix[0] == "occupancy";
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            collect_use(&path.tree, prefix, names);
            prefix.pop();
        }
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                collect_use(tree, prefix, names);
            }
        }
        syn::UseTree::Name(name) if under_occupancy && name.ident == "kernel" => {
            names.insert("kernel".to_owned());
        }
        syn::UseTree::Rename(rename) if under_occupancy && rename.ident == "kernel" => {
            names.insert(rename.rename.to_string());
        }
        syn::UseTree::Glob(_) if under_occupancy => {
            names.insert("kernel".to_owned());
        }
        _ => {}
    }
}
