//! Tokens for one `#[occupancy::kernel(...)]`: the item as written, then one const per kernel.

use occupancy_core::facts::CompiledFacts;
use occupancy_core::finding::Finding;
use occupancy_core::lint::Level;
use occupancy_core::spec::{KernelStub, Key, Owned, StubKernel, StubKind, Tunable, Value};
use proc_macro2::{Literal, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned, ToTokens};

use crate::facts_file::{self as facts, Lookup, Status};

pub(crate) fn kernel(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let stub = KernelStub::parse(item)?;
    let (item, kernels) = stub.declare(args)?;
    let consts = kernels
        .iter()
        .map(|kernel| declaration_const(kernel, &facts::lookup(kernel)?))
        .collect::<syn::Result<Vec<_>>>()?;
    Ok(quote! {
        #item
        #(#consts)*
    })
}

/// The findings the whole build settled about this declaration, at its attribute: deny ones
/// as errors; warn ones as warnings, through the one lint a proc macro can raise on stable
/// (`deprecated`, on a const named after the lint).
fn settled_findings(kernel: &StubKernel, lookup: &Lookup) -> syn::Result<TokenStream> {
    let Status::Checked { settled, .. } = &lookup.checked else {
        return Ok(TokenStream::new());
    };
    let mut errors: Option<syn::Error> = None;
    let mut warnings = Vec::new();
    for finding in settled {
        let text = settled_text(finding);
        match finding.level {
            Level::Deny => {
                let error = syn::Error::new(kernel.attribute_span, text);
                match &mut errors {
                    Some(errors) => errors.combine(error),
                    None => errors = Some(error),
                }
            }
            Level::Warn => {
                let name = format_ident!("{}", finding.lint.as_str(), span = kernel.attribute_span);
                warnings.push(quote_spanned! {kernel.attribute_span=>
                    const _: () = {
                        #[deprecated(note = #text)]
                        #[allow(non_upper_case_globals)]
                        const #name: () = ();
                        #name
                    };
                });
            }
            Level::Allow => {}
        }
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(quote!(#(#warnings)*)),
    }
}

/// `missing_kernel: ...` with its notes and help, as the build's diagnostics say them (rustc
/// puts `error: ` before it; a warning is named after the lint by its const).
fn settled_text(finding: &Finding) -> String {
    let mut text = match finding.level {
        Level::Deny => format!("{}: {}", finding.lint, finding.message),
        _ => finding.message.clone(),
    };
    for note in &finding.notes {
        text.push_str(&format!("\n  = note: {note}"));
    }
    if let Some(help) = &finding.help {
        text.push_str(&format!("\n  = help: {help}"));
    }
    text
}

/// `compiled` and `not_checked` of the const, and a use of the file read so rustc tracks it.
fn checked_fields(lookup: &Lookup) -> (TokenStream, TokenStream) {
    let file = lookup.file_read.display().to_string();
    let (compiled, not_checked) = match &lookup.checked {
        Status::Checked { compiled, .. } => (compiled.iter().map(compiled_facts).collect(), None),
        Status::Skipped { reason } => (
            Vec::new(),
            Some(format!("the build checked nothing: {reason}")),
        ),
        Status::OptedOut { reason } => (Vec::new(), Some(format!("unchecked: {reason}"))),
    };
    let not_checked = match not_checked {
        Some(reason) => quote!(::core::option::Option::Some(#reason)),
        None => quote!(::core::option::Option::None),
    };
    let compiled = quote!({
        // Tracked: when the build rewrites this file, the crate is compiled again.
        const _: &[u8] = ::core::include_bytes!(#file);
        &[#(#compiled),*]
    });
    (compiled, not_checked)
}

fn compiled_facts(facts: &CompiledFacts) -> TokenStream {
    let arch = &facts.arch;
    let registers = Literal::u32_unsuffixed(facts.registers);
    let spill_bytes = Literal::u64_unsuffixed(facts.spill_bytes);
    let stack_frame_bytes = Literal::u64_unsuffixed(facts.stack_frame_bytes);
    let static_smem_bytes = Literal::u64_unsuffixed(facts.static_smem_bytes);
    let block_threads = Literal::u32_unsuffixed(facts.block_threads);
    let blocks_per_sm = Literal::u32_unsuffixed(facts.blocks_per_sm);
    let warps_per_sm = Literal::u32_unsuffixed(facts.warps_per_sm);
    let occupancy = Literal::f64_suffixed(facts.occupancy);
    quote!(::occupancy::CompiledFacts {
        arch: #arch,
        registers: #registers,
        spill_bytes: #spill_bytes,
        stack_frame_bytes: #stack_frame_bytes,
        static_smem_bytes: #static_smem_bytes,
        block_threads: #block_threads,
        blocks_per_sm: #blocks_per_sm,
        warps_per_sm: #warps_per_sm,
        occupancy: #occupancy,
    })
}

/// `::core::option::Option::Some(#value)` or `None`.
fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

/// One key's value as the const's field holds it, whatever the key: the expansion knows kinds
/// of values, not keys.
fn value_tokens(value: Value<'_, Owned>) -> TokenStream {
    match value {
        Value::Block(block) => {
            let (x, y, z) = (
                Literal::u32_unsuffixed(block.x),
                Literal::u32_unsuffixed(block.y),
                Literal::u32_unsuffixed(block.z),
            );
            quote!(::occupancy::BlockDim { x: #x, y: #y, z: #z })
        }
        Value::Integer { value, .. } => Literal::u32_unsuffixed(value).into_token_stream(),
        Value::OptionalInteger(value) => {
            option(value.map(|value| Literal::u32_unsuffixed(value).into_token_stream()))
        }
        Value::Tunable(value) => option(value.map(|value| match value {
            Tunable::Fixed(fixed) => {
                let fixed = Literal::u32_unsuffixed(fixed);
                quote!(::occupancy::Tunable::Fixed(#fixed))
            }
            Tunable::Auto => quote!(::occupancy::Tunable::Auto),
        })),
        Value::Fraction(value) => {
            option(value.map(|value| Literal::f64_suffixed(value).into_token_stream()))
        }
        Value::Text(text) => option(text.map(|text| quote!(#text))),
        Value::Archs(names) | Value::Gpus(names) => {
            option(names.map(|names| quote!(&[#(#names),*])))
        }
        Value::Cluster(cluster) => option(cluster.map(|cluster| {
            let (x, y, z) = (
                Literal::u32_unsuffixed(cluster.x),
                Literal::u32_unsuffixed(cluster.y),
                Literal::u32_unsuffixed(cluster.z),
            );
            quote!(::occupancy::ClusterDim { x: #x, y: #y, z: #z })
        })),
        Value::Flag(flag) => quote!(#flag),
    }
}

/// `::occupancy::KernelSpec { ... }`: one field per key of the model's list, then the lint
/// settings.
fn spec_tokens(kernel: &StubKernel) -> TokenStream {
    let keys = Key::ALL.iter().map(|key| {
        let field = format_ident!("{}", key.info().field);
        let value = value_tokens(kernel.spec.value(*key));
        quote!(#field: #value)
    });
    let lints = lint_fields(kernel);
    quote!(::occupancy::KernelSpec {
        #(#keys,)*
        #lints
    })
}

fn declaration_const(kernel: &StubKernel, lookup: &Lookup) -> syn::Result<TokenStream> {
    let spec = &kernel.spec;
    let const_ident = const_ident(kernel)?;
    let visibility = &kernel.visibility;
    let rust_name = kernel.rust_name();
    let kernel_name = &kernel.kernel_name;
    let doc = format!(
        "Declared launch and limits of kernel `{kernel_name}` (from `#[occupancy::kernel({spec})]` on `{rust_name}`)."
    );
    let spec = spec_tokens(kernel);
    let location = source_location(kernel);
    let (compiled, not_checked) = checked_fields(lookup);
    let settled = settled_findings(kernel, lookup)?;
    Ok(quote! {
        #settled
        #[doc = #doc]
        #[allow(dead_code, non_upper_case_globals)]
        #visibility const #const_ident: ::occupancy::KernelDeclaration = ::occupancy::KernelDeclaration {
            rust_name: #rust_name,
            kernel_name: #kernel_name,
            spec: #spec,
            source: #location,
            compiled: #compiled,
            not_checked: #not_checked,
        };
    })
}

/// The const's name (`OCCUPANCY_<fn>`), spanned on the fn's name; an error when the fn's name
/// makes no identifier of it.
fn const_ident(kernel: &StubKernel) -> syn::Result<syn::Ident> {
    let const_name = kernel.const_name();
    if syn::parse_str::<syn::Ident>(&const_name).is_err() {
        return Err(syn::Error::new_spanned(
            &kernel.ident,
            format!("cannot name the generated const `{const_name}` after this fn: rename the fn"),
        ));
    }
    Ok(format_ident!("{}", const_name, span = kernel.ident.span()))
}

/// The spec's `lint_levels`, `expected_lints` and `lint_reasons` fields.
fn lint_fields(kernel: &StubKernel) -> TokenStream {
    let spec = &kernel.spec;
    let lint_levels = spec.lint_levels.iter().map(|(lint, level)| {
        let lint = lint.as_str();
        let level = match level {
            Level::Allow => quote!(::occupancy::LintLevel::Allow),
            Level::Warn => quote!(::occupancy::LintLevel::Warn),
            Level::Deny => quote!(::occupancy::LintLevel::Deny),
        };
        quote!((#lint, #level))
    });
    let expected_lints = spec.expected_lints.iter().map(|lint| lint.as_str());
    let lint_reasons = spec.lint_reasons.iter().map(|(lint, reason)| {
        let lint = lint.as_str();
        quote!((#lint, #reason))
    });
    quote! {
        lint_levels: &[#(#lint_levels),*],
        expected_lints: &[#(#expected_lints),*],
        lint_reasons: &[#(#lint_reasons),*],
    }
}

/// Where the declaration is written, as a `SourceLocation` expression.
fn source_location(kernel: &StubKernel) -> TokenStream {
    // file!/line!/column! resolve to the outermost expansion site: this attribute. A declaration
    // on a fn inside a marked extern block is not that site, so its own position is written out
    // (known to proc macros since Rust 1.88; older compilers report the block's marker instead).
    let start = kernel.attribute_span.start();
    if kernel.kind == StubKind::ForeignFunction && start.line > 0 {
        let line = Literal::u32_unsuffixed(start.line as u32);
        let column = Literal::u32_unsuffixed(start.column as u32 + 1);
        quote!(::occupancy::SourceLocation { file: ::core::file!(), line: #line, column: #column })
    } else {
        quote_spanned! {Span::call_site()=>
            ::occupancy::SourceLocation { file: ::core::file!(), line: ::core::line!(), column: ::core::column!() }
        }
    }
}
