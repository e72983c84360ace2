//! Escaping for the HTML page: text in element content and attribute values, and JSON inside a
//! `<script>` element. Every renderer that writes markup (the page, the SASS loop nest) escapes
//! through here.

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// JSON text made safe inside `<script type="application/json">`: `<`, `>` and `&` (which can
/// only occur inside JSON strings) become `\u003c`, `\u003e` and `\u0026`, so no kernel name can
/// close the element or open a comment.
pub fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for character in json.chars() {
        match character {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_close_its_element_and_reads_back_the_same() {
        let text = serde_json::to_string(&["</script><!--&", "a<b>"]).unwrap();
        let safe = script_json(&text);
        assert!(!safe.contains('<') && !safe.contains('>') && !safe.contains('&'));
        let back: Vec<String> = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, ["</script><!--&", "a<b>"]);
        assert_eq!(escape("a<\"&'>"), "a&lt;&quot;&amp;&#39;&gt;");
    }
}
