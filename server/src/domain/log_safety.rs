//! What peers can make the gateway log: refusal lines are rate-limited, and any text a peer
//! chose is escaped before it reaches a log line.
//!
//! Refusals (bad keys, quota, rejected chunks) are logged at info so operators see attacks and
//! misconfigured clients, but a peer must not be able to turn that into a log flood (5,100
//! lines in 3 s from one connection before). [`refusals`] lets one line per reason through per
//! second and says, on the next line, how many it held back; metrics count every refusal.
//!
//! Text a peer sent (a collector id, a source name, an error message quoting them) is written
//! with [`escape`]: control characters and Unicode format characters, the bidirectional
//! overrides (U+202E) among them, become `\u{...}`, so a log line reads as what it is.

use std::sync::OnceLock;

use entropy_ops::Throttle;

/// Most characters of peer text kept in a log line.
pub(crate) const MAX_CHARS: usize = 128;

/// The process-wide throttle for refusal lines (bad keys, quota, rejected chunks).
pub(crate) fn refusals() -> &'static Throttle {
    static REFUSALS: OnceLock<Throttle> = OnceLock::new();
    REFUSALS.get_or_init(Throttle::default)
}

/// `text` fit for a log line: control and format characters escaped, at most [`MAX_CHARS`]
/// characters kept (then `…`).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(4 * MAX_CHARS));
    for (i, c) in text.chars().enumerate() {
        if i == MAX_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() || is_format(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Unicode's format characters (general category Cf): invisible, and some reorder the text
/// around them.
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
    fn bidi_overrides_and_controls_are_escaped() {
        // Before: U+202E passed the sanitizer, so "txt.exe" could be made to read "exe.txt".
        assert_eq!(escape("ok\u{202E}txt.exe"), "ok\\u{202e}txt.exe");
        assert_eq!(escape("a\nb\u{1b}[31m"), "a\\u{a}b\\u{1b}[31m");
        assert_eq!(escape("\u{2066}\u{200F}\u{FEFF}"), "\\u{2066}\\u{200f}\\u{feff}");
        assert_eq!(escape("café-π"), "café-π", "ordinary text is kept");
        let long = "x".repeat(500);
        assert_eq!(escape(&long).chars().count(), MAX_CHARS + 1);
    }
}
