//! Kernel names for people: the demangled name with its return type and parameter list set
//! apart, so that `void candle::reduce<float, 256u>(float const*, float*, int)` reads as the
//! template it is. The text is the whole name (the filter and the page's search find every part
//! of it); only the markup differs.

use crate::report::markup::escape;

/// The parts of a demangled name: `void ` / `ns::kernel<T, 4>` / `(T const*, int)`. Names that
/// are not C++ function signatures (`extern "C"` kernels) are all `base`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NameParts<'a> {
    pub return_type: &'a str,
    pub base: &'a str,
    pub parameters: &'a str,
}

/// Splits a demangled name; one pass over its bytes.
pub(super) fn split_name(name: &str) -> NameParts<'_> {
    let whole = NameParts {
        return_type: "",
        base: name,
        parameters: "",
    };
    let Some(open) = name.ends_with(')').then(|| matching_open(name)).flatten() else {
        return whole;
    };
    let head = &name[..open];
    // The return type ends at the last space outside brackets (`unsigned int ns::k<a, b>`).
    let mut depth = 0i32;
    let mut space = None;
    for (index, byte) in head.bytes().enumerate() {
        match byte {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' => depth -= 1,
            b' ' if depth == 0 => space = Some(index),
            _ => {}
        }
    }
    let base_start = space.map_or(0, |index| index + 1);
    if head[base_start..].is_empty() {
        return whole;
    }
    NameParts {
        return_type: &head[..base_start],
        base: &head[base_start..],
        parameters: &name[open..],
    }
}

/// The byte index of the `(` matching the name's final `)`.
fn matching_open(name: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (index, byte) in name.bytes().enumerate().rev() {
        match byte {
            b')' => depth += 1,
            b'(' => {
                depth -= 1;
                if depth == 0 {
                    return (index > 0).then_some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// The name as escaped markup: return type and parameters in muted spans, and a line break
/// allowed after each `::` and `<` of the name, so that a wrapped name breaks between its parts.
pub(super) fn name_html(name: &str) -> String {
    let parts = split_name(name);
    let mut out = String::with_capacity(name.len() + 64);
    if !parts.return_type.is_empty() {
        out.push_str("<span class=\"ret\">");
        out.push_str(&escape(parts.return_type));
        out.push_str("</span>");
    }
    out.push_str(
        &escape(parts.base)
            .replace("::", "::<wbr>")
            .replace("&lt;", "&lt;<wbr>"),
    );
    if !parts.parameters.is_empty() {
        out.push_str("<span class=\"args\">");
        out.push_str(&escape(parts.parameters));
        out.push_str("</span>");
    }
    out
}

/// The name without return type, parameters and namespaces, for short lists: `kernel<T, 4>`
/// of `void ns::kernel<T, 4>(T*)` (namespaces inside template arguments stay).
pub(super) fn short_name(name: &str) -> &str {
    let base = split_name(name).base;
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = base.as_bytes();
    for (index, &byte) in bytes.iter().enumerate() {
        match byte {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' => depth -= 1,
            b':' if depth == 0 && bytes.get(index + 1) == Some(&b':') => start = index + 2,
            _ => {}
        }
    }
    if start < base.len() {
        &base[start..]
    } else {
        base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_signatures_split_at_the_top_level() {
        let parts =
            split_name("void candle::reduce<float, (Op)2>(float const*, void (*)(int), int)");
        assert_eq!(parts.return_type, "void ");
        assert_eq!(parts.base, "candle::reduce<float, (Op)2>");
        assert_eq!(parts.parameters, "(float const*, void (*)(int), int)");
        let parts = split_name("unsigned int ns::k<a b>(int)");
        assert_eq!(
            (parts.return_type, parts.base),
            ("unsigned int ", "ns::k<a b>")
        );
        let plain = split_name("reduce_spills(float const*, float*, int)");
        assert_eq!((plain.return_type, plain.base), ("", "reduce_spills"));
        assert_eq!(
            short_name("void candle::attn::fwd<cute::tuple<int>, 64>(int)"),
            "fwd<cute::tuple<int>, 64>"
        );
        assert_eq!(short_name("saxpy"), "saxpy");
        assert_eq!(short_name("ns::"), "ns::");
        for whole in ["saxpy", "(int)", "k)", "a (b)) c"] {
            assert_eq!(split_name(whole).base, whole, "{whole}");
        }
        assert_eq!(
            name_html("void ns::k<\"&'>(int)"),
            "<span class=\"ret\">void </span>ns::<wbr>k&lt;<wbr>&quot;&amp;&#39;&gt;<span class=\"args\">(int)</span>"
        );
    }
}
