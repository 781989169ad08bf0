//! Text a peer chose (a Host or Origin header, a collector id), made fit for a log line or
//! refused where it would be shown: control characters and Unicode format characters.
//!
//! Format characters (general category Cf) are invisible, and the bidirectional ones (U+202E
//! RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, ...) reorder the text around them, so
//! "txt.exe" can be made to read "exe.txt". Control characters (Cc) can end a log line or
//! colour a terminal. [`escape`] writes both as `\u{...}`; [`is_control_or_format`] is the
//! test for code that refuses them instead.
//!
//! The one table: the gateway and entropy-mcp both escape with it.

/// Most characters of peer text kept in a log line.
pub const MAX_CHARS: usize = 128;

/// `text` fit for a log line: control and format characters escaped as `\u{...}`, at most
/// [`MAX_CHARS`] characters kept (then `…`).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * MAX_CHARS));
    for (i, c) in text.chars().enumerate() {
        if i == MAX_CHARS {
            out.push('…');
            break;
        }
        if is_control_or_format(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// True for a control character (general category Cc) or a Unicode format character (Cf).
pub fn is_control_or_format(c: char) -> bool {
    c.is_control() || is_format(c)
}

/// Unicode's format characters (general category Cf, Unicode 15): invisible, and some reorder
/// the text around them.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{0600}'..='\u{0605}' | '\u{061C}' | '\u{06DD}' | '\u{070F}'
        | '\u{0890}'..='\u{0891}' | '\u{08E2}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}' | '\u{110BD}' | '\u{110CD}'
        | '\u{13430}'..='\u{1343F}' | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0001}' | '\u{E0020}'..='\u{E007F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_zero_widths_and_controls_are_escaped() {
        assert_eq!(escape("ok\u{202E}txt.exe"), "ok\\u{202e}txt.exe");
        assert_eq!(escape("a\nb\u{1b}[31m"), "a\\u{a}b\\u{1b}[31m");
        assert_eq!(
            escape("\u{2066}\u{200F}\u{FEFF}\u{061C}"),
            "\\u{2066}\\u{200f}\\u{feff}\\u{61c}"
        );
        assert_eq!(escape("café-π ✓"), "café-π ✓", "ordinary text is kept");
        let long = "x".repeat(500);
        assert_eq!(escape(&long).chars().count(), MAX_CHARS + 1);
    }

    #[test]
    fn the_refused_set_is_cc_and_cf() {
        let refused = [
            '\u{0}',
            '\n',
            '\u{7f}',
            '\u{9b}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{200E}',
            '\u{200F}',
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{061C}',
            '\u{FEFF}',
            '\u{E0041}',
        ];
        for c in refused {
            assert!(is_control_or_format(c), "{:x}", u32::from(c));
        }
        for c in ['-', ' ', '_', '.', 'é', '·', '\u{00A0}', '\u{2014}', '✓'] {
            assert!(!is_control_or_format(c), "{:x}", u32::from(c));
        }
    }
}
