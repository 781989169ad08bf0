//! What peers can make the gateway log: refusal lines are rate-limited, and any text a peer
//! chose is escaped before it reaches a log line.
//!
//! Refusals (bad keys, quota, rejected chunks) are logged at info so operators see attacks and
//! misconfigured clients, but a peer must not be able to turn that into a log flood (5,100
//! lines in 3 s from one connection before). [`Throttle`] lets one line per reason through per
//! second and says, on the next line, how many it held back; metrics count every refusal.
//!
//! Text a peer sent (a collector id, a source name, an error message quoting them) is written
//! with [`escape`]: control characters and Unicode format characters, the bidirectional
//! overrides (U+202E) among them, become `\u{...}`, so a log line reads as what it is.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How often one reason may be logged.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Most characters of peer text kept in a log line.
pub const MAX_CHARS: usize = 128;

/// Lets one line per reason through per [`INTERVAL`].
#[derive(Debug, Default)]
pub struct Throttle {
    reasons: Mutex<HashMap<&'static str, (Instant, u64)>>,
}

impl Throttle {
    /// The process-wide throttle for refusal lines.
    pub fn refusals() -> &'static Throttle {
        static REFUSALS: OnceLock<Throttle> = OnceLock::new();
        REFUSALS.get_or_init(Throttle::default)
    }

    /// `Some(n)` when a line for `reason` may be written now, `n` being how many were held
    /// back since the last one; `None` when it is to be held back.
    pub fn allow(&self, reason: &'static str) -> Option<u64> {
        self.allow_at(reason, Instant::now())
    }

    fn allow_at(&self, reason: &'static str, now: Instant) -> Option<u64> {
        let mut reasons = self.reasons.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match reasons.get_mut(reason) {
            Some((last, held)) if now.duration_since(*last) < INTERVAL => {
                *held += 1;
                None
            }
            Some((last, held)) => {
                *last = now;
                Some(std::mem::take(held))
            }
            None => {
                reasons.insert(reason, (now, 0));
                Some(0)
            }
        }
    }
}

/// `text` fit for a log line: control and format characters escaped, at most [`MAX_CHARS`]
/// characters kept (then `…`).
pub fn escape(text: &str) -> String {
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

    #[test]
    fn one_line_per_reason_per_interval_with_the_count_held_back() {
        let t = Throttle::default();
        let start = Instant::now();
        assert_eq!(t.allow_at("bad_key", start), Some(0));
        for i in 1..=1000 {
            assert_eq!(t.allow_at("bad_key", start + Duration::from_micros(i)), None);
        }
        assert_eq!(t.allow_at("bad_mac", start), Some(0), "reasons are counted apart");
        assert_eq!(t.allow_at("bad_key", start + INTERVAL), Some(1000), "says what it held");
        assert_eq!(t.allow_at("bad_key", start + INTERVAL), None);
    }
}
