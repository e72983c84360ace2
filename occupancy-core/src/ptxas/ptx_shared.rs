//! The shared memory a PTX `.entry` declares and names, and whether it lets ptxas spill
//! registers there (`.pragma "enable_smem_spilling"`, CUDA 13): what tells ptxas's spill area
//! apart from the kernel's own shared memory in its `N bytes smem`, and what ptxas refuses the
//! pragma with (dynamic shared memory). Evidence: docs/ptxas-formats.md, "Shared-memory register
//! spilling".
//!
//! ptxas lays out a kernel's static shared memory as its own `.shared` variables in the order of
//! the text, then the module's `.shared` variables its body names, in the order they are
//! declared, each at its alignment, and prints where the last one ends (ptxas 13.0 on sm_90:
//! a 5-byte `char` array then a 16-byte `double` array print 24 bytes, the other order 21; a
//! `char` of the kernel's with the module's `char[3]` and `double[2]` 24). The spill area comes
//! after them.
//!
//! Read in the one pass of [`super::parse_ptx_directives`]: the module's declarations as the pass
//! goes by them ([`ModuleShared::read`]; PTX declares a variable before its first use), each
//! entry's body once ([`read_body`]). A body is searched for the module's dynamic shared
//! variables by name (one whole-text search per name; modules have a few), and for its own
//! declarations only when it has the pragma.

use super::text::{find, line_around, line_text};

/// The pragma's name in `.pragma "enable_smem_spilling";`.
const SMEM_SPILLING_PRAGMA: &str = "enable_smem_spilling";

/// What tells a kernel's shared-memory spill area apart from its own shared memory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, Default)]
#[non_exhaustive]
pub struct SmemSpilling {
    /// The static shared memory the kernel itself declares, as ptxas lays it out (its own
    /// `.shared` variables, then the module's it names, each at its alignment); ptxas's
    /// `N bytes smem` above it is the spill area. `None` when a declaration it uses could not be
    /// read. From a cubin: ptxas's static shared memory less `EIATTR_SHARED_SCRATCH`.
    pub declared_shared_bytes: Option<u64>,
}

impl SmemSpilling {
    /// The spilling of a kernel that declares `declared_shared_bytes` of its own.
    pub fn declaring(declared_shared_bytes: Option<u64>) -> SmemSpilling {
        SmemSpilling {
            declared_shared_bytes,
        }
    }
}

/// One variable of a `.shared` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SharedVariable {
    name: String,
    /// Bytes; `None` for an unsized array (`.extern .shared .b8 smem[]`).
    bytes: Option<u64>,
    align: u64,
    /// `.extern .shared`: dynamic shared memory, sized at launch.
    external: bool,
}

/// The module-scope `.shared` declarations read so far, in the order of the text. `None` for a
/// declaration that could not be read (its name, when known, is kept).
#[derive(Debug, Default)]
pub(crate) struct ModuleShared {
    variables: Vec<Result<SharedVariable, Option<String>>>,
}

impl ModuleShared {
    /// Reads the declarations in `text`, module-scope text between entries (a `.func`'s body
    /// included: its own declarations are named only in it).
    pub(crate) fn read(&mut self, text: &str) {
        self.variables.extend(declarations_in(text));
    }

    fn dynamic_names(&self) -> impl Iterator<Item = &str> {
        self.variables.iter().filter_map(|variable| match variable {
            Ok(variable) if variable.external => Some(variable.name.as_str()),
            _ => None,
        })
    }
}

/// What an entry's body says about shared memory.
#[derive(Debug, Default)]
pub(crate) struct BodyShared {
    /// The module's dynamic shared variables it names.
    pub dynamic_shared: Vec<String>,
    /// With the pragma, the static shared memory it declares.
    pub smem_spilling: Option<SmemSpilling>,
}

/// Reads what `body` (an entry's `{ ... }`) says about shared memory: the module's dynamic
/// shared variables it names, and, when it has the pragma, the static shared memory it declares
/// as ptxas lays it out (`None` when a declaration it uses could not be read).
pub(crate) fn read_body(body: &str, module: &ModuleShared) -> BodyShared {
    let mut dynamic: Vec<String> = Vec::new();
    for name in module.dynamic_names() {
        if !dynamic.iter().any(|known| known == name) && names(body, name) {
            dynamic.push(name.to_owned());
        }
    }
    if !has_pragma(body) {
        return BodyShared {
            dynamic_shared: dynamic,
            smem_spilling: None,
        };
    }
    let own = declarations_in(body);
    let named = module.variables.iter().filter(|variable| match variable {
        Ok(variable) => !variable.external && names(body, &variable.name),
        Err(name) => name.as_deref().is_none_or(|name| names(body, name)),
    });
    let mut end = Some(0u64);
    for variable in own.iter().chain(named) {
        end = match (end, variable) {
            (Some(end), Ok(variable)) => variable
                .bytes
                .map(|bytes| end.next_multiple_of(variable.align.max(1)) + bytes),
            _ => None,
        };
    }
    BodyShared {
        dynamic_shared: dynamic,
        smem_spilling: Some(SmemSpilling {
            declared_shared_bytes: end,
        }),
    }
}

/// Whether `body` holds `.pragma "enable_smem_spilling"` (comments are gone; the string is kept).
/// Searched with its quotes: `"` is rare in PTX, where `e` starts most lines' words.
fn has_pragma(body: &str) -> bool {
    let quoted = format!("\"{SMEM_SPILLING_PRAGMA}\"");
    let mut from = 0;
    while let Some(offset) = find(&body[from..], &quoted) {
        let at = from + offset;
        let (start, end) = line_around(body, at);
        let statement = line_text(body, start, end).trim_start();
        if statement.starts_with(".pragma") {
            return true;
        }
        from = end.max(at + 1);
    }
    false
}

/// Whether `text` names the identifier `name` (not as part of a longer identifier).
fn names(text: &str, name: &str) -> bool {
    let identifier = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.');
    let mut from = 0;
    while let Some(offset) = text[from..].find(name) {
        let at = from + offset;
        let end = at + name.len();
        let before = text[..at].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(identifier) && !after.is_some_and(identifier) {
            return true;
        }
        from = at + 1;
    }
    false
}

/// Every `.shared` declaration in `text`, in order. One whole-text search (`str::find`, fast
/// over a long text even unoptimized, where `text::find` would stop at every `.`); a line that
/// holds `.shared` is read only when it starts with a directive (not `ld.shared`).
fn declarations_in(text: &str) -> Vec<Result<SharedVariable, Option<String>>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(offset) = text[from..].find(".shared") {
        let (start, end) = line_around(text, from + offset);
        let line = line_text(text, start, end);
        if line.trim_start().starts_with('.') {
            found.extend(declaration(line));
        }
        from = end.max(from + offset + 1);
    }
    found
}

/// The variables a line declares, when it is a `.shared` declaration (`[.extern|.visible|.weak]
/// .shared [.align N] [.vN] .type name[dims], ...;`); a declaration that cannot be read is an
/// `Err` with the name when it has one.
fn declaration(line: &str) -> Vec<Result<SharedVariable, Option<String>>> {
    let statement = line.split(';').next().unwrap_or("").trim();
    let mut tokens = statement.split_whitespace().peekable();
    let mut external = false;
    while let Some(&token) = tokens.peek() {
        match token {
            ".extern" => external = true,
            ".visible" | ".weak" | ".common" => {}
            _ => break,
        }
        tokens.next();
    }
    if tokens.next() != Some(".shared") {
        return Vec::new();
    }
    let (mut align, mut vector, mut element) = (None, 1u64, None);
    let mut rest = Vec::new();
    while let Some(token) = tokens.next() {
        match token {
            ".align" => align = tokens.next().and_then(|n| n.parse::<u64>().ok()),
            ".v2" | ".v4" | ".v8" => vector = token[2..].parse().unwrap_or(1),
            _ if token.starts_with('.') && element.is_none() => {
                element = Some(element_bytes(token))
            }
            _ => rest.push(token),
        }
    }
    let declarators = rest.concat();
    declarators
        .split(',')
        .filter(|declarator| !declarator.is_empty())
        .map(|declarator| {
            let name_end = declarator.find('[').unwrap_or(declarator.len());
            let name = declarator[..name_end].to_owned();
            let element = element.flatten().map(|bytes| bytes * vector);
            let (Some(element), Some(count)) = (element, elements(&declarator[name_end..])) else {
                return Err(Some(name));
            };
            Ok(SharedVariable {
                bytes: count.map(|count| count * element),
                align: align.unwrap_or(element),
                external,
                name,
            })
        })
        .collect()
}

/// Bytes of one element of a PTX type (`.b8` 1, `.f32` 4, `.u64` 8, `.b128` 16); `None` for
/// a type without a width (`.pred`) or an unknown one.
fn element_bytes(token: &str) -> Option<u64> {
    let kind = token.strip_prefix('.')?;
    let digits = kind.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let bits: u64 = digits.parse().ok()?;
    let known = matches!(
        &kind[..kind.len() - digits.len()],
        "b" | "u" | "s" | "f" | "bf"
    );
    (known && bits.is_multiple_of(8) && bits > 0).then_some(bits / 8)
}

/// Elements of the dimensions `[4][8]` (`Some(Some(32))`), of a scalar (`""`: 1), of an unsized
/// array (`[]`: `Some(None)`); `None` when they cannot be read.
fn elements(dimensions: &str) -> Option<Option<u64>> {
    let mut count = 1u64;
    let mut rest = dimensions;
    while !rest.is_empty() {
        let inner = rest.strip_prefix('[')?;
        let close = inner.find(']')?;
        let size = &inner[..close];
        if size.is_empty() {
            return Some(None);
        }
        count = count.checked_mul(size.parse().ok()?)?;
        rest = &inner[close + 1..];
    }
    Some(Some(count))
}

#[cfg(test)]
mod tests {
    use super::super::parse_ptx_directives;
    use super::*;

    /// The PTX nvcc 13.0 wrote for the layouts ptxas 13.0 was seen to print (module docs).
    const PTX: &str = "\
.version 9.0
.target sm_90
.shared .align 1 .b8 mod_c[3];
.shared .align 8 .b8 mod_d[16];
.extern .shared .align 16 .b8 dyn[];
.visible .entry own_then_module(
\t.param .u64 p
)
.maxntid 256, 1, 1
{
\t.shared .align 1 .u8 _ZZ2l4E1a_$_0;
\t.pragma \"enable_smem_spilling\";
\tst.shared.u8 [_ZZ2l4E1a_$_0], %rs1;
\tst.shared.u8 [mod_c+1], %rs1;
\tmov.u32 %r1, mod_d;
\tret;
}
.visible .entry in_order()
{
\t.shared .align 1 .b8 _ZZ2l3E1a[5];
\t.shared .align 8 .b8 _ZZ2l3E1d[16];
\t.pragma \"enable_smem_spilling\";
\tret;
}
.visible .entry dynamic_user()
{
\t.pragma \"enable_smem_spilling\";
\tmov.u32 %r1, dyn;
\tret;
}
.visible .entry no_pragma()
{
\tld.shared.u32 %r1, [dyn+4]; // enable_smem_spilling in a comment
\tmov.u32 %r2, dynamic;
\tret;
}
";

    #[test]
    fn declared_bytes_follow_ptxas_layout_and_dynamic_names_are_found() {
        let entries = parse_ptx_directives(PTX);
        let declared = |index: usize| {
            entries[index]
                .smem_spilling
                .as_ref()
                .map(|spilling| spilling.declared_shared_bytes)
        };
        // 1 own byte, then the module's 3 at 1..4 and 16 at 8..24: ptxas printed 24.
        assert_eq!(declared(0), Some(Some(24)));
        assert!(entries[0].dynamic_shared.is_empty());
        // 5 bytes, then 16 aligned to 8: 24, as ptxas printed.
        assert_eq!(declared(1), Some(Some(24)));
        assert_eq!(declared(2), Some(Some(0)));
        assert_eq!(entries[2].dynamic_shared, ["dyn"]);
        assert_eq!(declared(3), None, "no pragma: not read");
        assert_eq!(
            entries[3].dynamic_shared,
            ["dyn"],
            "`dynamic` is another name"
        );
    }

    #[test]
    fn declarations_of_every_form_are_read_or_refused() {
        let one = |line: &str| declaration(line).into_iter().next();
        let variable = |name: &str, bytes: Option<u64>, align: u64, external: bool| {
            Some(Ok(SharedVariable {
                name: name.to_owned(),
                bytes,
                align,
                external,
            }))
        };
        assert_eq!(
            one("\t.shared .align 16 .b8 _ZZ5mixedE4quad[80];"),
            variable("_ZZ5mixedE4quad", Some(80), 16, false)
        );
        assert_eq!(
            one(".extern .shared .align 16 .b8 dyn[];"),
            variable("dyn", None, 16, true)
        );
        assert_eq!(
            one(".visible .shared .v4 .f32 quads[2][3];"),
            variable("quads", Some(96), 16, false)
        );
        assert_eq!(
            one(".shared .f64 scalar;"),
            variable("scalar", Some(8), 8, false)
        );
        let two = declaration(".shared .align 4 .u32 a, b [2];");
        assert_eq!(two.len(), 2);
        assert_eq!(
            two[1],
            Ok(SharedVariable {
                name: "b".into(),
                bytes: Some(8),
                align: 4,
                external: false
            })
        );
        assert_eq!(one(".shared .pred flag;"), Some(Err(Some("flag".into()))));
        assert_eq!(one(".shared .b8 odd[x];"), Some(Err(Some("odd".into()))));
        for not_one in [
            "\tld.shared.u32 %r1, [a];",
            ".global .b8 g[4];",
            "",
            ".shared",
        ] {
            assert_eq!(one(not_one), None, "{not_one:?}");
        }
    }

    #[test]
    fn an_unreadable_declaration_the_kernel_uses_leaves_its_bytes_unknown() {
        let ptx = ".shared .pred flag;\n.visible .entry k()\n{\n\t.pragma \"enable_smem_spilling\";\n\tmov.u32 %r1, flag;\n}\n.visible .entry other()\n{\n\t.pragma \"enable_smem_spilling\";\n}\n";
        let entries = parse_ptx_directives(ptx);
        assert_eq!(
            entries[0].smem_spilling,
            Some(SmemSpilling {
                declared_shared_bytes: None
            })
        );
        assert_eq!(
            entries[1].smem_spilling,
            Some(SmemSpilling {
                declared_shared_bytes: Some(0)
            })
        );
    }
}
