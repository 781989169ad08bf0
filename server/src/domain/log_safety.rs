//! What peers can make the gateway log: refusal lines are rate-limited, and any text a peer
//! chose is escaped before it reaches a log line.
//!
//! Refusals (bad keys, quota, rejected chunks) are logged at info so operators see attacks and
//! misconfigured clients, but a peer must not be able to turn that into a log flood (5,100
//! lines in 3 s from one connection before). [`refusals`] lets one line per reason through per
//! second and says, on the next line, how many it held back; metrics count every refusal.
//!
//! Text a peer sent (a collector id, a source name, an error message quoting them) is written
//! with [`escape`] (entropy-ops' one table): control characters and Unicode format characters,
//! the bidirectional overrides (U+202E) among them, become `\u{...}`, so a log line reads as
//! what it is.

use std::sync::OnceLock;

use entropy_ops::Throttle;

/// The process-wide throttle for refusal lines (bad keys, quota, rejected chunks).
pub(crate) fn refusals() -> &'static Throttle {
    static REFUSALS: OnceLock<Throttle> = OnceLock::new();
    REFUSALS.get_or_init(Throttle::default)
}

/// `text` fit for a log line: control and format characters escaped, at most
/// [`entropy_ops::peer_text::MAX_CHARS`] characters kept (the one table, shared with
/// entropy-mcp).
pub(crate) use entropy_ops::peer_text::escape;

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
        assert_eq!(escape(&long).chars().count(), entropy_ops::peer_text::MAX_CHARS + 1);
    }
}
