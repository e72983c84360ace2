//! The attribute's grammar: tokens inside `#[occupancy::kernel(...)]` → [`KernelSpec`].
//!
//! Syntax errors stop the parse (syn's own messages); value errors (types, ranges, names) are
//! collected so one compile shows every mistake in the attribute.
//!
//! Nothing here is about one key: a key is found in [`KEYS`], its value parsed and validated by
//! its [`Kind`] (with the range and the reasons its declaration gives), and stored through
//! [`KernelSpec::value_mut`](occupancy_model::KernelSpec::value_mut). A new key of an existing
//! kind needs no change here.

use std::collections::HashMap;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Expr, Lit};

use occupancy_model::{ClusterDim, Level, MAX_CLUSTER_BLOCKS_ANY_ARCH};

use super::{
    BlockDim, KernelSpec, Key, Kind, Owned, SpecKey, Tunable, Value, ValueMut, KEYS,
    MAX_BLOCK_DIMS, MAX_THREADS_PER_BLOCK,
};
use crate::lint_id::LintId;
use crate::names::did_you_mean;

/// Where one key was written: the key's first token and the last token of its value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyOccurrence {
    pub key: SpecKey,
    pub start: Span,
    pub end: Span,
}

#[derive(Debug)]
pub(crate) struct ParsedSpec {
    pub spec: KernelSpec,
    pub keys: Vec<KeyOccurrence>,
}

const LEVEL_WORDS: [&str; 4] = ["allow", "warn", "deny", "expect"];

fn all_key_words() -> impl Iterator<Item = &'static str> {
    KEYS.iter().map(|info| info.name).chain(LEVEL_WORDS)
}

/// A `syn::Error` at `tokens` whose message ends with where the key is documented.
fn error_at(
    tokens: impl ToTokens,
    key: impl Into<SpecKey>,
    message: impl std::fmt::Display,
) -> syn::Error {
    let link = key.into().docs_link();
    syn::Error::new_spanned(tokens, format!("{message} (see {link})"))
}

/// Parses the attribute's argument tokens. `attribute_span` is where errors about the whole
/// attribute (a missing `block`) point.
pub(crate) fn parse_spec(tokens: TokenStream, attribute_span: Span) -> syn::Result<ParsedSpec> {
    let mut state = State::default();
    let parser = syn::meta::parser(|meta| state.entry(meta));
    let syntax = parser.parse2(tokens);
    let State {
        mut errors,
        block_set,
        spec,
        keys,
        seen,
    } = state;
    if let Err(syntax_error) = syntax {
        // Keep the value errors found before the parse stopped.
        errors.push(syntax_error);
        return Err(combine(errors));
    }
    if !block_set {
        if seen.contains_key(&SpecKey::Key(Key::Block)) {
            // `block` was written but is invalid: its own error says so.
            return Err(combine(errors));
        }
        // First: it is about the attribute as a whole, which starts before any key.
        errors.insert(0, syn::Error::new(
            attribute_span,
            format!(
                "missing `block`: declare the threads per block the crate launches this kernel with, \
                 e.g. `#[occupancy::kernel(block = 256)]` (see {})",
                SpecKey::Key(Key::Block).docs_link()
            ),
        ));
        return Err(combine(errors));
    }
    errors.extend(needs_other_keys(&spec, &keys));
    if !errors.is_empty() {
        return Err(combine(errors));
    }
    Ok(ParsedSpec { spec, keys })
}

/// The keys that cannot stand alone: `family` with `name`, and every key without a key it
/// [`needs`](occupancy_model::KeyInfo::needs) (an assumed grid needs `launch`, which says its
/// blocks must all be resident; a fixed grid needs the `gpus` it is checked on). Each error points
/// at the key written and says what to add.
fn needs_other_keys(spec: &KernelSpec, keys: &[KeyOccurrence]) -> Vec<syn::Error> {
    let mut errors = Vec::new();
    let mut refuse = |key: Key, message: String| {
        if let Some(occurrence) = keys
            .iter()
            .find(|occurrence| occurrence.key == SpecKey::Key(key))
        {
            let link = SpecKey::Key(key).docs_link();
            errors.push(syn::Error::new(
                occurrence.start,
                format!("{message} (see {link})"),
            ));
        }
    };
    if spec.family.is_some() && spec.name.is_some() {
        refuse(Key::Family, "`family` and `name` cannot both be set: `family` declares every kernel matching a pattern, `name` one kernel; keep one".to_string());
    }
    for (auto, other) in [
        (Key::MinBlocksPerSm, Key::MaxRegisters),
        (Key::MaxRegisters, Key::MinBlocksPerSm),
    ] {
        if !matches!(spec.value(auto), Value::Tunable(Some(Tunable::Auto))) {
            continue;
        }
        if spec.value(other).is_set() {
            refuse(auto, format!(
                "`{auto} = \"auto\"` cannot be combined with `{other} = {}`: the build chooses the kernel's register cap itself (nvcc takes a minimum of blocks or a register cap, not both); remove `{other}`, or write a number for `{auto}`",
                spec.value(other)
            ));
        }
        if spec.family.is_some() {
            refuse(auto, format!(
                "`{auto} = \"auto\"` cannot be used with `family`: every kernel of a family shares one `OCCUPANCY_BOUNDS_FAMILY_...` macro, and the build chooses bounds for one kernel; write a number, or declare the kernel on its own with `name`"
            ));
        }
    }
    for key in Key::ALL {
        let value = spec.value(key);
        if !value.is_set() {
            continue;
        }
        for need in key.info().needs {
            if !spec.value(*need).is_set() {
                let info = need.info();
                refuse(key, format!(
                    "`{key} = {value}` needs `{need}`: write e.g. `{need} = {}` ({}; without it, {})",
                    info.example, info.summary.trim_end_matches('.'), info.when_absent
                ));
            }
        }
    }
    errors
}

fn combine(errors: Vec<syn::Error>) -> syn::Error {
    let mut errors = errors.into_iter();
    let mut first = errors
        .next()
        .expect("combine is called with at least one error");
    for error in errors {
        first.combine(error);
    }
    first
}

struct State {
    spec: KernelSpec,
    /// Whether `block`, the one key without which there is no declaration, was read.
    block_set: bool,
    keys: Vec<KeyOccurrence>,
    /// First occurrence of each key: its key token and its value as written.
    seen: HashMap<SpecKey, String>,
    errors: Vec<syn::Error>,
}

impl Default for State {
    fn default() -> State {
        State {
            spec: KernelSpec::with_block(BlockDim::linear(1)),
            block_set: false,
            keys: Vec::new(),
            seen: HashMap::new(),
            errors: Vec::new(),
        }
    }
}

impl State {
    fn entry(&mut self, meta: ParseNestedMeta<'_>) -> syn::Result<()> {
        let Some(word) = meta.path.get_ident().map(|ident| ident.to_string()) else {
            let path = meta.path.to_token_stream().to_string().replace(' ', "");
            return Err(syn::Error::new_spanned(
                &meta.path,
                format!(
                    "unknown key `{path}`: keys are single words; write one of {} (see {})",
                    all_key_words().collect::<Vec<_>>().join(", "),
                    super::DOCS_PATH
                ),
            ));
        };
        if let Some(level) = level_of_word(&word) {
            return self.lint_list(meta, level);
        }
        let Some(key) = Key::ALL.into_iter().find(|key| key.as_str() == word) else {
            self.errors.push(unknown_key(&meta.path, &word));
            // Skip its value so the rest of the attribute is still checked.
            if meta.input.peek(syn::Token![=]) {
                meta.value()?.parse::<Expr>()?;
            } else if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            return Ok(());
        };
        if !meta.input.peek(syn::Token![=]) {
            return Err(error_at(
                &meta.path,
                key,
                format!(
                    "`{word}` needs a value: write `{word} = {}`",
                    key.info().example
                ),
            ));
        }
        let value_expr: Expr = meta.value()?.parse()?;
        let value_expr = strip_groups(value_expr);
        let value_text = value_expr.to_token_stream().to_string();
        if let Some(first_value) = self.seen.get(&SpecKey::Key(key)) {
            self.errors.push(error_at(
                &meta.path,
                key,
                format!(
                    "duplicate key `{word}`: it is already set to `{first_value}` earlier in this attribute; \
                     remove one of the two"
                ),
            ));
            return Ok(());
        }
        self.seen.insert(SpecKey::Key(key), value_text);
        self.keys.push(KeyOccurrence {
            key: SpecKey::Key(key),
            start: meta.path.span(),
            end: last_span(&value_expr),
        });
        if let Err(error) = self.set_value(key, &value_expr) {
            self.errors.push(error);
        }
        Ok(())
    }

    fn set_value(&mut self, key: Key, value: &Expr) -> syn::Result<()> {
        let parsed = parse_value(key, value)?;
        if matches!(parsed, Parsed::Block(_)) {
            self.block_set = true;
        }
        assign(self.spec.value_mut(key), parsed);
        Ok(())
    }

    fn lint_list(&mut self, meta: ParseNestedMeta<'_>, level: LintList) -> syn::Result<()> {
        let level_word = level.as_str();
        if !meta.input.peek(syn::token::Paren) {
            return Err(error_at(
                &meta.path,
                SpecKey::Lint(LintId::Spills),
                format!("`{level_word}` takes a list of lints: write `{level_word}(spills)` or `{level_word}(spills, stack_frame)`"),
            ));
        }
        let content;
        syn::parenthesized!(content in meta.input);
        let items =
            syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated(&content)?;
        let mut lints = Vec::new();
        let mut reason = None;
        for item in &items {
            match item {
                syn::Meta::Path(path) => lints.push(path),
                syn::Meta::NameValue(pair) if pair.path.is_ident("reason") => {
                    match self.reason(pair, level_word, reason.is_some()) {
                        Ok(text) => reason = Some(text),
                        Err(error) => self.errors.push(error),
                    }
                }
                other => self.errors.push(error_at(
                    other,
                    SpecKey::Lint(LintId::Spills),
                    format!("`{level_word}(...)` holds lint names and one `reason = \"...\"`: write e.g. `{level_word}(spills, reason = \"why\")`"),
                )),
            }
        }
        if lints.is_empty() {
            self.errors.push(error_at(
                &meta.path,
                SpecKey::Lint(LintId::Spills),
                format!("`{level_word}()` names no lint: write e.g. `{level_word}(spills)` or remove it"),
            ));
        }
        for path in lints {
            if let Some(lint) = self.lint_name(path, level_word) {
                match level {
                    LintList::Level(level) => {
                        self.spec.lint_levels.insert(lint, level);
                    }
                    LintList::Expect => {
                        self.spec.expected_lints.insert(lint);
                    }
                }
                if let Some(reason) = &reason {
                    self.spec.lint_reasons.insert(lint, reason.clone());
                }
            }
        }
        Ok(())
    }

    /// The text of `reason = "..."`.
    fn reason(
        &self,
        pair: &syn::MetaNameValue,
        level_word: &str,
        duplicate: bool,
    ) -> syn::Result<String> {
        let key = SpecKey::Lint(LintId::Spills);
        if duplicate {
            return Err(error_at(
                &pair.path,
                key,
                format!("`{level_word}(...)` has two reasons: keep one"),
            ));
        }
        match strip_groups(pair.value.clone()) {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(text), ..
            }) if !text.value().trim().is_empty() => Ok(text.value()),
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(_), ..
            }) => Err(error_at(
                &pair.value,
                key,
                "`reason` is empty: say why, e.g. `reason = \"register tiling: low occupancy is the design\"`",
            )),
            other => Err(error_at(
                &other,
                key,
                format!("`reason` must be a string, not {}: write `reason = \"...\"`", describe(&other)),
            )),
        }
    }

    /// The lint a path names, recorded as a key; `None` (with an error kept) when unknown or
    /// already given a level.
    fn lint_name(&mut self, path: &syn::Path, level_word: &str) -> Option<LintId> {
        let written = path.to_token_stream().to_string().replace(' ', "");
        let lint = match written.parse::<LintId>() {
            Ok(lint) => lint,
            Err(unknown) => {
                let hint = match unknown.suggestion {
                    Some(suggestion) => format!("did you mean `{suggestion}`?"),
                    None => format!(
                        "the lints are {}",
                        LintId::ALL
                            .iter()
                            .map(|id| id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                self.errors.push(error_at(
                    path,
                    SpecKey::Lint(LintId::Spills),
                    format!("unknown lint `{written}`: {hint}"),
                ));
                return None;
            }
        };
        let key = SpecKey::Lint(lint);
        if let Some(first) = self.seen.get(&key) {
            self.errors.push(error_at(
                path,
                key,
                format!("lint `{lint}` already has a level in this attribute (`{first}`); keep only one"),
            ));
            return None;
        }
        self.seen.insert(key, format!("{level_word}({lint})"));
        self.keys.push(KeyOccurrence {
            key,
            start: path.span(),
            end: path.span(),
        });
        Some(lint)
    }
}

/// A lint list's word: a level, or `expect`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LintList {
    Level(Level),
    Expect,
}

impl LintList {
    fn as_str(self) -> &'static str {
        match self {
            LintList::Level(level) => level.as_str(),
            LintList::Expect => "expect",
        }
    }
}

fn level_of_word(word: &str) -> Option<LintList> {
    match word {
        "allow" => Some(LintList::Level(Level::Allow)),
        "warn" => Some(LintList::Level(Level::Warn)),
        "deny" => Some(LintList::Level(Level::Deny)),
        "expect" => Some(LintList::Expect),
        _ => None,
    }
}

fn unknown_key(path: &syn::Path, word: &str) -> syn::Error {
    let suggestion = KEYS
        .iter()
        .find(|info| info.aliases.contains(&word))
        .map(|info| info.name)
        .or_else(|| did_you_mean(word, all_key_words()));
    let docs = super::DOCS_PATH;
    let choice_of = KEYS
        .iter()
        .find(|info| matches!(info.kind, Kind::Choice { choices } if choices.contains(&word)));
    let message = if let Some(info) = choice_of {
        let key = info.name;
        format!("unknown key `{word}`: did you mean `{key}`? `{word}` is one of its values: write `{key} = \"{word}\"` (see {docs}#{key})")
    } else if let Ok(lint) = word.parse::<LintId>() {
        format!("`{word}` is a lint, not a key: set its level with `allow({lint})`, `warn({lint})` or `deny({lint})` (see {docs}#lint-levels)")
    } else if word == "forbid" {
        format!("`forbid` is not a lint level here: write `deny(...)`, which fails the build (see {docs}#lint-levels)")
    } else if let Some(suggestion) = suggestion {
        let anchor = if LEVEL_WORDS.contains(&suggestion) {
            "lint-levels"
        } else {
            suggestion
        };
        format!("unknown key `{word}`: did you mean `{suggestion}`? (see {docs}#{anchor})")
    } else {
        format!(
            "unknown key `{word}`: the keys are {} (see {docs}#keys)",
            all_key_words().collect::<Vec<_>>().join(", ")
        )
    };
    syn::Error::new_spanned(path, message)
}

/// A key's value, parsed and validated by its kind.
#[derive(Debug)]
enum Parsed {
    Block(BlockDim),
    Integer(u32),
    Tunable(Tunable),
    Fraction(f64),
    Text(String),
    Archs(Vec<String>),
    Gpus(Vec<String>),
    Cluster(ClusterDim),
    Flag(bool),
}

fn parse_value(key: Key, value: &Expr) -> syn::Result<Parsed> {
    Ok(match key.info().kind {
        Kind::Block => Parsed::Block(parse_block(value, key)?),
        Kind::Integer { min, max, why_max } => {
            Parsed::Integer(integer_in(value, key, min, max, why_max)?)
        }
        Kind::IntegerOrAuto { min, max, why_max } => {
            Parsed::Tunable(integer_or_auto(value, key, min, max, why_max)?)
        }
        Kind::Fraction => Parsed::Fraction(parse_fraction(value, key)?),
        Kind::Symbol => Parsed::Text(parse_symbol(value, key)?),
        Kind::Pattern => Parsed::Text(parse_pattern(value, key)?),
        Kind::Archs => Parsed::Archs(parse_archs(value, key)?),
        Kind::Choice { choices } => Parsed::Text(parse_choice(value, key, choices)?),
        Kind::Gpus => Parsed::Gpus(parse_gpus(value, key)?),
        Kind::Cluster => Parsed::Cluster(parse_cluster(value, key)?),
        Kind::Flag => Parsed::Flag(parse_flag(value, key)?),
    })
}

/// Stores a parsed value in its key's field. A key's field type follows from its kind
/// (`occupancy-model` checks every key's pair), so no other pair occurs.
fn assign(field: ValueMut<'_, Owned>, parsed: Parsed) {
    match (field, parsed) {
        (ValueMut::Block(field), Parsed::Block(block)) => *field = block,
        (ValueMut::Integer(field), Parsed::Integer(value)) => *field = value,
        (ValueMut::OptionalInteger(field), Parsed::Integer(value)) => *field = Some(value),
        (ValueMut::Tunable(field), Parsed::Tunable(value)) => *field = Some(value),
        (ValueMut::Fraction(field), Parsed::Fraction(value)) => *field = Some(value),
        (ValueMut::Text(field), Parsed::Text(text)) => *field = Some(text),
        (ValueMut::Archs(field), Parsed::Archs(archs)) => *field = Some(archs),
        (ValueMut::Gpus(field), Parsed::Gpus(gpus)) => *field = Some(gpus),
        (ValueMut::Cluster(field), Parsed::Cluster(cluster)) => *field = Some(cluster),
        (ValueMut::Flag(field), Parsed::Flag(flag)) => *field = flag,
        (field, parsed) => {
            unreachable!("a field {field:?} holds no {parsed:?}: its key's kind decides its type")
        }
    }
}

/// Undoes invisible (macro-made) and written parentheses around a value.
fn strip_groups(expr: Expr) -> Expr {
    match expr {
        Expr::Group(group) => strip_groups(*group.expr),
        other => other,
    }
}

fn last_span(expr: &Expr) -> Span {
    expr.to_token_stream()
        .into_iter()
        .last()
        .map_or_else(|| expr.span(), |token| token.span())
}

/// What kind of thing the expression is, for "expected X, found Y" messages.
fn describe(expr: &Expr) -> &'static str {
    match expr {
        Expr::Lit(lit) => match lit.lit {
            Lit::Str(_) => "a string",
            Lit::Int(_) => "an integer",
            Lit::Float(_) => "a decimal number",
            Lit::Bool(_) => "a boolean",
            _ => "a literal of another type",
        },
        Expr::Path(_) => "a name",
        Expr::Tuple(_) | Expr::Paren(_) => "a tuple",
        Expr::Array(_) => "a list",
        Expr::Binary(_) | Expr::Unary(_) => "an expression",
        Expr::Macro(_) => "a macro call",
        _ => "an expression",
    }
}

/// Message for values that are not literals: the build helper reads the attribute from source
/// text without compiling, so it cannot evaluate names or arithmetic.
fn not_a_literal(expr: &Expr, key: Key, expected: &str) -> syn::Error {
    let found = describe(expr);
    let write = match (key.info().kind, expr) {
        // `name = saxpy`: the symbol was meant, unquoted.
        (Kind::Symbol | Kind::Choice { .. }, Expr::Path(path)) => {
            format!("`{key} = \"{}\"`", path.to_token_stream())
        }
        _ => format!("e.g. `{key} = {}`", key.info().example),
    };
    let why = match expr {
        Expr::Path(_) | Expr::Binary(_) | Expr::Macro(_) | Expr::Call(_) | Expr::MethodCall(_) => {
            "; values must be literals because the build helper reads this attribute from the source without compiling it"
        }
        _ => "",
    };
    error_at(
        expr,
        key,
        format!(
            "`{}` expects {expected}, found {found}: write {write}{why}",
            key.as_str()
        ),
    )
}

/// A non-negative integer literal without a type suffix.
fn integer_literal(expr: &Expr, key: Key) -> syn::Result<u64> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(int), ..
        }) => {
            if !int.suffix().is_empty() {
                return Err(error_at(
                    int,
                    key,
                    format!(
                        "remove the `{}` suffix: write the plain number `{}`",
                        int.suffix(),
                        int.base10_digits()
                    ),
                ));
            }
            int.base10_parse::<u64>().map_err(|_| {
                error_at(
                    int,
                    key,
                    format!(
                        "`{}` is too large for `{}`",
                        int.base10_digits(),
                        key.as_str()
                    ),
                )
            })
        }
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            ..
        }) => Err(error_at(
            expr,
            key,
            format!("`{}` cannot be negative", key.as_str()),
        )),
        other => Err(not_a_literal(other, key, "an integer")),
    }
}

fn integer_in(
    expr: &Expr,
    key: Key,
    minimum: u32,
    maximum: u32,
    why_max: &str,
) -> syn::Result<u32> {
    let value = integer_literal(expr, key)?;
    if value < u64::from(minimum) {
        return Err(error_at(
            expr,
            key,
            format!(
                "`{} = {value}` is out of range: the smallest allowed value is {minimum}",
                key.as_str()
            ),
        ));
    }
    if value > u64::from(maximum) {
        return Err(error_at(
            expr,
            key,
            format!(
                "`{} = {value}` is out of range: the largest allowed value is {maximum} ({why_max})",
                key.as_str(),
            ),
        ));
    }
    Ok(value as u32)
}

/// An integer in `minimum..=maximum`, or the string `"auto"` (the build chooses the value).
fn integer_or_auto(
    expr: &Expr,
    key: Key,
    minimum: u32,
    maximum: u32,
    why_max: &str,
) -> syn::Result<Tunable> {
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = expr
    else {
        return match expr {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Int(_), ..
            })
            | Expr::Unary(_) => {
                integer_in(expr, key, minimum, maximum, why_max).map(Tunable::Fixed)
            }
            other => Err(not_a_literal(
                other,
                key,
                &format!("an integer ({minimum} to {maximum}) or `\"auto\"`"),
            )),
        };
    };
    let written = text.value();
    if written == "auto" {
        return Ok(Tunable::Auto);
    }
    let hint = match written.trim().parse::<u64>() {
        Ok(number) => format!("write the number without quotes, `{key} = {number}`"),
        Err(_) if written.trim().eq_ignore_ascii_case("auto") => {
            format!("write `{key} = \"auto\"` (lower case, no spaces)")
        }
        Err(_) => format!(
            "write a number ({minimum} to {maximum}), or `{key} = \"auto\"` to let the build choose it per architecture"
        ),
    };
    Err(error_at(
        text,
        key,
        format!("`{key} = \"{written}\"` is neither a number nor `\"auto\"`: {hint}"),
    ))
}

fn parse_block(expr: &Expr, key: Key) -> syn::Result<BlockDim> {
    let (elements, limits) = match expr {
        Expr::Tuple(tuple) => {
            if tuple.elems.is_empty() || tuple.elems.len() > 3 {
                return Err(error_at(
                    tuple,
                    key,
                    format!(
                        "a block has 1 to 3 dimensions, found {}: write `block = 256`, `block = (32, 8)` or `block = (8, 8, 4)`",
                        tuple.elems.len()
                    ),
                ));
            }
            (tuple.elems.iter().collect::<Vec<_>>(), ["x", "y", "z"])
        }
        Expr::Paren(paren) => (vec![&*paren.expr], ["x", "y", "z"]),
        single => (vec![single], ["x", "y", "z"]),
    };
    let maximums = [MAX_BLOCK_DIMS.0, MAX_BLOCK_DIMS.1, MAX_BLOCK_DIMS.2];
    let mut dims = [1u32; 3];
    for (index, element) in elements.iter().enumerate() {
        let element = match element {
            Expr::Group(group) => &*group.expr,
            other => other,
        };
        let value = match integer_literal(element, key) {
            Ok(value) => value,
            Err(_) if matches!(element, Expr::Unary(_)) => {
                return Err(error_at(
                    element,
                    key,
                    "threads per block must be positive: write e.g. `block = 256`",
                ))
            }
            Err(error) => return Err(error),
        };
        let axis = limits[index];
        if value == 0 {
            return Err(error_at(
                element,
                key,
                format!("a block needs at least 1 thread along {axis}: write a positive number, e.g. `block = 256`"),
            ));
        }
        if value > u64::from(maximums[index]) {
            return Err(error_at(
                element,
                key,
                format!(
                    "{value} threads along {axis} is more than any GPU allows ({} along {axis}, {MAX_THREADS_PER_BLOCK} per block)",
                    maximums[index]
                ),
            ));
        }
        dims[index] = value as u32;
    }
    let block = BlockDim {
        x: dims[0],
        y: dims[1],
        z: dims[2],
    };
    let threads = u64::from(block.x) * u64::from(block.y) * u64::from(block.z);
    if threads > u64::from(MAX_THREADS_PER_BLOCK) {
        return Err(error_at(
            expr,
            key,
            format!(
                "block {block} is {threads} threads, more than the {MAX_THREADS_PER_BLOCK} threads per block any GPU allows: make it smaller"
            ),
        ));
    }
    Ok(block)
}

/// `cluster = 2`, `(2, 2)` or `(2, 2, 2)`: each dimension at least 1, at most
/// [`MAX_CLUSTER_BLOCKS_ANY_ARCH`] blocks in all.
fn parse_cluster(expr: &Expr, key: Key) -> syn::Result<ClusterDim> {
    let elements: Vec<&Expr> = match expr {
        Expr::Tuple(tuple) if (1..=3).contains(&tuple.elems.len()) => tuple.elems.iter().collect(),
        Expr::Tuple(tuple) => {
            return Err(error_at(
                tuple,
                key,
                format!(
                    "a cluster has 1 to 3 dimensions, found {}: write `cluster = 2`, `cluster = (2, 2)` or `cluster = (2, 2, 2)`",
                    tuple.elems.len()
                ),
            ))
        }
        Expr::Paren(paren) => vec![&*paren.expr],
        single => vec![single],
    };
    let mut dims = [1u32; 3];
    for (index, element) in elements.into_iter().enumerate() {
        let element = match element {
            Expr::Group(group) => &*group.expr,
            other => other,
        };
        let value = integer_literal(element, key)?;
        let axis = ["x", "y", "z"][index];
        if value == 0 || value > u64::from(MAX_CLUSTER_BLOCKS_ANY_ARCH) {
            return Err(error_at(
                element,
                key,
                format!("{value} blocks along {axis}: a cluster has 1 to {MAX_CLUSTER_BLOCKS_ANY_ARCH} blocks along each dimension"),
            ));
        }
        dims[index] = value as u32;
    }
    let cluster = ClusterDim::new(dims[0], dims[1], dims[2]);
    let blocks = u64::from(dims[0]) * u64::from(dims[1]) * u64::from(dims[2]);
    if blocks > u64::from(MAX_CLUSTER_BLOCKS_ANY_ARCH) {
        return Err(error_at(
            expr,
            key,
            format!("cluster {cluster} is {blocks} blocks, more than the {MAX_CLUSTER_BLOCKS_ANY_ARCH} any GPU launches in one cluster: make it smaller"),
        ));
    }
    Ok(cluster)
}

/// `true` or `false`.
fn parse_flag(expr: &Expr, key: Key) -> syn::Result<bool> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Bool(flag),
            ..
        }) => Ok(flag.value),
        other => Err(not_a_literal(other, key, "`true` or `false`")),
    }
}

fn parse_fraction(expr: &Expr, key: Key) -> syn::Result<f64> {
    let (fraction, written) = match expr {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Float(float),
            ..
        }) => {
            if !float.suffix().is_empty() {
                return Err(error_at(
                    float,
                    key,
                    format!(
                        "remove the `{}` suffix: write the plain number `{}`",
                        float.suffix(),
                        float.base10_digits()
                    ),
                ));
            }
            let value = float
                .base10_parse::<f64>()
                .map_err(|error| error_at(float, key, error))?;
            (value, float.base10_digits().to_owned())
        }
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(_), ..
        }) => {
            let value = integer_literal(expr, key)?;
            (value as f64, value.to_string())
        }
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(text),
            ..
        }) => parse_percentage(text, key)?,
        Expr::Unary(syn::ExprUnary {
            op: syn::UnOp::Neg(_),
            ..
        }) => {
            return Err(error_at(
                expr,
                key,
                format!("`{key}` must be in (0, 1]: a fraction such as 0.5, or \"50%\""),
            ))
        }
        other => {
            return Err(not_a_literal(
                other,
                key,
                "a fraction (0.5) or a percentage (\"50%\")",
            ))
        }
    };
    if !(fraction > 0.0 && fraction <= 1.0) {
        return Err(error_at(
            expr,
            key,
            format!("`{key} = {written}` is out of range: occupancy is a fraction in (0, 1], e.g. 0.5 or \"50%\""),
        ));
    }
    Ok(fraction)
}

/// `"50%"`: the fraction, and the text as written.
fn parse_percentage(text: &syn::LitStr, key: Key) -> syn::Result<(f64, String)> {
    let text_value = text.value();
    let Some(number) = text_value.trim().strip_suffix('%') else {
        return Err(error_at(
            text,
            key,
            format!("write a fraction `{key} = 0.5` or a percentage `{key} = \"50%\"`, found \"{text_value}\""),
        ));
    };
    let percent = number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|percent| percent.is_finite())
        .ok_or_else(|| {
            error_at(
                text,
                key,
                format!("\"{text_value}\" is not a percentage: write e.g. `{key} = \"50%\"`"),
            )
        })?;
    Ok((percent / 100.0, text_value))
}

fn parse_symbol(expr: &Expr, key: Key) -> syn::Result<String> {
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = expr
    else {
        return Err(not_a_literal(expr, key, "a string"));
    };
    let name = text.value();
    if name.is_empty() {
        return Err(error_at(text, key, format!("`{key}` is empty: write the kernel's compiled symbol, or remove `{key}` to use the Rust name")));
    }
    if name.trim() != name || name.chars().any(char::is_control) {
        return Err(error_at(
            text,
            key,
            format!("`{key}` has leading or trailing whitespace or control characters: write the symbol exactly as compiled"),
        ));
    }
    Ok(name)
}

fn parse_pattern(expr: &Expr, key: Key) -> syn::Result<String> {
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = expr
    else {
        return Err(not_a_literal(expr, key, "a string pattern"));
    };
    let pattern = text.value();
    if pattern.is_empty() {
        return Err(error_at(text, key, format!("`{key}` is empty: write a pattern of compiled symbols such as `{key} = \"affine_*\"`")));
    }
    if let Some(bad) = pattern
        .chars()
        .find(|character| !super::family::is_pattern_char(*character))
    {
        return Err(error_at(
            text,
            key,
            format!("`{key} = \"{pattern}\"` holds `{}`: a pattern is a compiled symbol's characters (letters, digits, `_`, `$`, `.`) and `*` for any run of them; `*` is the only wildcard", bad.escape_default()),
        ));
    }
    if !pattern.contains('*') {
        return Err(error_at(
            text,
            key,
            format!("`{key} = \"{pattern}\"` has no `*`, so it names one kernel: write `name = \"{pattern}\"`, or add `*` where the family's names differ (e.g. `\"{pattern}_*\"`)"),
        ));
    }
    if pattern.chars().all(|character| character == '*') {
        return Err(error_at(
            text,
            key,
            format!("`{key} = \"{pattern}\"` matches every kernel: set the launch of undeclared kernels with `block = N` under `[package.metadata.occupancy]` instead"),
        ));
    }
    Ok(pattern)
}

/// A key whose value is a non-empty list of strings (`archs`, `gpus`): the list's shape checked
/// once, each element's meaning left to the caller.
struct StringList {
    /// What one element names (`arch`, `GPU`).
    what: &'static str,
    /// Two example elements, for the hints.
    examples: [&'static str; 2],
    /// What `key = []` means, after the `key = []` (`{key}` is replaced by the key).
    empty: &'static str,
}

impl StringList {
    /// The list's string literals, or an error at what is not one.
    fn parse<'e>(&self, expr: &'e Expr, key: Key) -> syn::Result<Vec<&'e syn::LitStr>> {
        let [first, second] = self.examples;
        let Expr::Array(array) = expr else {
            let hint = match expr {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => format!("write a list: `{key} = [\"{}\"]`", text.value()),
                _ => format!("write a list of strings: `{key} = [\"{first}\", \"{second}\"]`"),
            };
            return Err(error_at(
                expr,
                key,
                format!("`{key}` expects a list, found {}: {hint}", describe(expr)),
            ));
        };
        if array.elems.is_empty() {
            let meaning = self.empty.replace("{key}", &key.to_string());
            return Err(error_at(array, key, format!("`{key} = []` {meaning}")));
        }
        array
            .elems
            .iter()
            .map(|element| match element {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(text),
                    ..
                }) => Ok(text),
                _ => Err(error_at(
                    element,
                    key,
                    format!(
                        "each {} is a string, found {}: write e.g. `\"{first}\"`",
                        self.what,
                        describe(element)
                    ),
                )),
            })
            .collect()
    }
}

fn parse_archs(expr: &Expr, key: Key) -> syn::Result<Vec<String>> {
    let list = StringList {
        what: "arch",
        examples: ["sm_80", "sm_90"],
        empty:
            "would check nothing: name at least one arch, or remove `{key}` to use the crate's list",
    };
    let texts = list.parse(expr, key)?;
    let mut archs: Vec<String> = Vec::with_capacity(texts.len());
    let mut seen: Vec<crate::arch::Arch> = Vec::with_capacity(texts.len());
    for text in texts {
        let arch = text.value();
        let parsed = match crate::arch::Arch::parse(&arch) {
            Ok(parsed) => parsed,
            Err(error) => {
                let hint = match error.suggestion {
                    Some(suggestion) => format!("did you mean \"{suggestion}\"?"),
                    None => format!("known: {}", crate::arch::known_names()),
                };
                return Err(error_at(
                    text,
                    key,
                    format!("unknown arch \"{arch}\": {hint}"),
                ));
            }
        };
        if let Some(index) = seen.iter().position(|earlier| *earlier == parsed) {
            return Err(error_at(
                text,
                key,
                format!(
                    "\"{arch}\" is listed twice in `{key}` (as \"{}\" too): remove one",
                    archs[index]
                ),
            ));
        }
        seen.push(parsed);
        archs.push(arch);
    }
    Ok(archs)
}

/// A string that is one of `choices`.
fn parse_choice(expr: &Expr, key: Key, choices: &[&str]) -> syn::Result<String> {
    let listed = choices
        .iter()
        .map(|choice| format!("`{key} = \"{choice}\"`"))
        .collect::<Vec<_>>()
        .join(" or ");
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = expr
    else {
        return Err(not_a_literal(expr, key, "a string"));
    };
    let written = text.value();
    if choices.contains(&written.as_str()) {
        return Ok(written);
    }
    let hint = match did_you_mean(&written, choices.iter().copied()) {
        Some(choice) => format!("did you mean `{key} = \"{choice}\"`?"),
        None => format!("write {listed}"),
    };
    Err(error_at(
        text,
        key,
        format!("`{key} = \"{written}\"` is not a kind of launch this key knows: {hint}"),
    ))
}

/// A list of GPU products by the names of `cargo occupancy arch --gpus`, each once; stored
/// under the table's own name (`"H100"` is `"h100"`).
fn parse_gpus(expr: &Expr, key: Key) -> syn::Result<Vec<String>> {
    let list = StringList {
        what: "GPU",
        examples: ["h100", "h20"],
        empty: "names no GPU: name at least one (`cargo occupancy arch --gpus`), or remove `{key}`",
    };
    let texts = list.parse(expr, key)?;
    let mut gpus: Vec<String> = Vec::with_capacity(texts.len());
    for text in texts {
        let name = text.value();
        let gpu = crate::arch::preset(&name).map_err(|_| {
            let names = crate::arch::presets().iter().map(|gpu| gpu.name);
            let hint = match did_you_mean(&name.to_ascii_lowercase(), names.clone()) {
                Some(suggestion) => format!("did you mean \"{suggestion}\"?"),
                None => format!("known: {}", names.collect::<Vec<_>>().join(", ")),
            };
            error_at(
                text,
                key,
                format!("unknown GPU \"{name}\": {hint} (the table, with each GPU's SM count and its source: `cargo occupancy arch --gpus`)"),
            )
        })?;
        if gpus.iter().any(|earlier| earlier == gpu.name) {
            return Err(error_at(
                text,
                key,
                format!(
                    "\"{name}\" names the `{}` already listed in `{key}`: remove one",
                    gpu.name
                ),
            ));
        }
        gpus.push(gpu.name.to_string());
    }
    Ok(gpus)
}
