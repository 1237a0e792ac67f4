//! Text from input files made safe to print: a message that quotes a file must not clear the
//! screen, set the terminal's title or reorder what follows (control characters, escape
//! sequences, bidirectional overrides), and a binary file must not flood it.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Bytes of a token quoted in full; longer ones are cut with a count of what was cut.
pub const QUOTE_MAX: usize = 40;

/// `'token'` with every byte that is not printable text escaped (see [`escape`]), cut after
/// [`QUOTE_MAX`] bytes: `'abc...' (1234 more bytes)`.
pub fn quote(token: &[u8]) -> String {
    let shown = &token[..token.len().min(QUOTE_MAX)];
    let mut out = String::with_capacity(shown.len() + 2);
    out.push('\'');
    push_escaped(&mut out, shown, false);
    if token.len() > QUOTE_MAX {
        let _ = write!(out, "...' ({} more bytes)", token.len() - QUOTE_MAX);
    } else {
        out.push('\'');
    }
    out
}

/// `text` with control characters escaped (`\x1b`, `\0`, `\t`, `\r`, `\n`), as are the
/// invisible formatting characters that reorder or hide text (bidirectional controls, line and
/// paragraph separators: `\u{202e}`). Borrowed when nothing needs escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_impl(text, false)
}

/// Like [`escape`], but keeps line breaks: for multi-line messages (a TOML error shows the line
/// at fault under a caret).
pub fn escape_keeping_lines(text: &str) -> Cow<'_, str> {
    escape_impl(text, true)
}

fn escape_impl(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| needs_escape(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    push_escaped(&mut out, text.as_bytes(), keep_newlines);
    Cow::Owned(out)
}

fn needs_escape(c: char, keep_newlines: bool) -> bool {
    if c == '\n' {
        return !keep_newlines;
    }
    c.is_control() || is_invisible_format(c)
}

/// Characters that change how the text around them is shown: bidirectional embeddings,
/// overrides and isolates, the line and paragraph separators, and the byte order mark.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// Appends `bytes` escaped: valid UTF-8 text as itself, other bytes as `\xNN`.
fn push_escaped(out: &mut String, bytes: &[u8], keep_newlines: bool) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if !needs_escape(c, keep_newlines) {
                out.push(c);
                continue;
            }
            match c {
                '\0' => out.push_str("\\0"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\n' => out.push_str("\\n"),
                c if (c as u32) < 0x100 => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => {
                    let _ = write!(out, "\\u{{{:x}}}", c as u32);
                }
            }
        }
        for &b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_are_escaped_and_text_is_not() {
        assert_eq!(
            quote(b"1 \x1b[2J\x1b]0;X\x07"),
            "'1 \\x1b[2J\\x1b]0;X\\x07'"
        );
        assert_eq!(quote(b"a\0b\tc\r"), "'a\\0b\\tc\\r'");
        assert_eq!(quote(b"\xff\xfe"), "'\\xff\\xfe'");
        assert_eq!(quote("é".as_bytes()), "'é'");
        assert_eq!(escape("x\u{202e}y\u{9b}"), "x\\u{202e}y\\x9b");
        assert!(matches!(escape("plain text"), Cow::Borrowed(_)));
        assert_eq!(escape_keeping_lines("a\nb\x1b"), "a\nb\\x1b");
        assert_eq!(escape("a\nb"), "a\\nb");
    }

    #[test]
    fn long_tokens_are_cut_with_a_count() {
        let long = vec![b'7'; 1000];
        let q = quote(&long);
        assert!(
            q.starts_with(&format!("'{}...'", "7".repeat(QUOTE_MAX))),
            "{q}"
        );
        assert!(q.ends_with("(960 more bytes)"), "{q}");
    }
}
