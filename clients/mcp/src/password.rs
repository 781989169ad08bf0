//! Passwords and passphrases: the alphabets, the word list, and their entropy.
//!
//! Each character (or word) is an independent uniform pick, so a secret of `n` picks among `m`
//! options has exactly `n · log2(m)` bits of entropy. A custom alphabet must not repeat a
//! character: a repeat would make that character likelier and the reported entropy false.
//!
//! Neither a custom alphabet nor a separator may hold a control character or a Unicode format
//! character (general category Cc or Cf): they are invisible, and the bidirectional ones
//! (U+202E RIGHT-TO-LEFT OVERRIDE, U+2066..U+2069, ...) reorder the text around them, so the
//! secret an agent shows would not read as the secret it holds.

use entropy_ops::peer_text::{escape, is_control_or_format};

/// Shortest password.
pub const MIN_LENGTH: u64 = 4;
/// Longest password.
pub const MAX_LENGTH: u64 = 256;
/// Default password length.
pub const DEFAULT_LENGTH: u64 = 20;
/// Most characters in a custom alphabet.
pub const MAX_CUSTOM_CHARACTERS: usize = 256;
/// Fewest and most words in a passphrase.
pub const MIN_WORDS: u64 = 1;
/// Most words in a passphrase.
pub const MAX_WORDS: u64 = 32;
/// Default passphrase length in words.
pub const DEFAULT_WORDS: u64 = 6;
/// Longest separator between words.
pub const MAX_SEPARATOR_CHARS: usize = 8;

/// The passphrase word list: 2048 common English words of 3 to 6 lowercase letters, written
/// for this project (11 bits per word).
pub const WORDS_TEXT: &str = include_str!("words.txt");

/// The words of [`WORDS_TEXT`].
pub fn words() -> Vec<&'static str> {
    WORDS_TEXT.lines().filter(|l| !l.is_empty()).collect()
}

/// A named alphabet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// Its name in the tool's `alphabet` argument.
    pub name: &'static str,
    /// Its characters.
    pub characters: &'static str,
}

/// The named alphabets, the first being the default.
pub const PRESETS: &[Preset] = &[
    Preset {
        name: "alphanumeric",
        characters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    },
    Preset {
        name: "printable",
        characters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789\
                     !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~",
    },
    Preset {
        name: "unambiguous",
        characters: "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789",
    },
    Preset { name: "letters", characters: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" },
    Preset { name: "lowercase", characters: "abcdefghijklmnopqrstuvwxyz" },
    Preset { name: "digits", characters: "0123456789" },
    Preset { name: "hex", characters: "0123456789abcdef" },
];

/// The preset names, for messages and the schema.
pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// Why an alphabet was refused; the message names the argument and what it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlphabetError {
    /// Both a preset and custom characters were given.
    #[error("give either alphabet (a preset name) or characters (your own), not both")]
    Both,
    /// The custom alphabet has fewer than 2 or more than [`MAX_CUSTOM_CHARACTERS`] characters.
    #[error("characters has {0} characters, must have 2..={MAX_CUSTOM_CHARACTERS}")]
    Count(usize),
    /// The custom alphabet holds a control or format character (shown escaped, as `\u{202e}`).
    #[error(
        "characters contains {0}, a control or Unicode format character (general category Cc \
         or Cf): these are invisible or reorder the text around them"
    )]
    Invisible(String),
    /// The custom alphabet holds a character twice.
    #[error(
        "characters repeats {0:?}: each character must appear once, or it would be likelier \
         than the others"
    )]
    Repeated(char),
    /// No preset has this name.
    #[error("alphabet is {0:?}, must be one of {names}", names = preset_names().join(", "))]
    Preset(String),
}

/// The characters to pick from: a preset by name, or `custom` (2..=256 distinct, printable
/// characters). Errors name the argument and what it must be.
pub fn alphabet(preset: Option<&str>, custom: Option<&str>) -> Result<Vec<char>, AlphabetError> {
    match (preset, custom) {
        (Some(_), Some(_)) => Err(AlphabetError::Both),
        (_, Some(custom)) => {
            let chars: Vec<char> = custom.chars().collect();
            if !(2..=MAX_CUSTOM_CHARACTERS).contains(&chars.len()) {
                return Err(AlphabetError::Count(chars.len()));
            }
            if let Some(&c) = chars.iter().find(|&&c| is_control_or_format(c)) {
                return Err(AlphabetError::Invisible(escape(&c.to_string())));
            }
            let mut seen = std::collections::HashSet::new();
            if let Some(&c) = chars.iter().find(|c| !seen.insert(**c)) {
                return Err(AlphabetError::Repeated(c));
            }
            Ok(chars)
        }
        (name, None) => {
            let name = name.unwrap_or(PRESETS[0].name);
            PRESETS
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.characters.chars().collect())
                .ok_or_else(|| AlphabetError::Preset(name.to_owned()))
        }
    }
}

/// Why a passphrase separator was refused; the message names the argument and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeparatorError {
    /// More characters than [`MAX_SEPARATOR_CHARS`].
    #[error("argument `separator` has {0} characters, must have 0..={MAX_SEPARATOR_CHARS}")]
    TooLong(usize),
    /// A control or format character (shown escaped, as `\u{202e}`).
    #[error(
        "argument `separator` contains {0}, a control or Unicode format character (general \
         category Cc or Cf, such as the bidirectional overrides U+202A..U+202E and isolates \
         U+2066..U+2069, or the zero-width U+200B..U+200D): these are invisible or reorder the \
         text around them, so none may be used"
    )]
    Invisible(String),
}

/// `separator` if it may go between the words: at most [`MAX_SEPARATOR_CHARS`] characters,
/// none of them a control or format character.
pub fn separator(separator: &str) -> Result<&str, SeparatorError> {
    let count = separator.chars().count();
    if count > MAX_SEPARATOR_CHARS {
        return Err(SeparatorError::TooLong(count));
    }
    match separator.chars().find(|&c| is_control_or_format(c)) {
        Some(c) => Err(SeparatorError::Invisible(escape(&c.to_string()))),
        None => Ok(separator),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_list_has_2048_distinct_short_lowercase_words() {
        let words = words();
        assert_eq!(words.len(), 2048);
        let distinct: std::collections::HashSet<_> = words.iter().collect();
        assert_eq!(distinct.len(), 2048);
        for w in &words {
            assert!((3..=6).contains(&w.len()) && w.bytes().all(|b| b.is_ascii_lowercase()), "{w}");
        }
    }

    #[test]
    fn presets_have_distinct_characters_and_the_expected_sizes() {
        let sizes: Vec<_> =
            PRESETS.iter().map(|p| (p.name, p.characters.chars().count())).collect();
        assert_eq!(
            sizes,
            [
                ("alphanumeric", 62),
                ("printable", 94),
                ("unambiguous", 57),
                ("letters", 52),
                ("lowercase", 26),
                ("digits", 10),
                ("hex", 16)
            ]
        );
        for p in PRESETS {
            let set: std::collections::HashSet<_> = p.characters.chars().collect();
            assert_eq!(set.len(), p.characters.chars().count(), "{}", p.name);
        }
    }

    #[test]
    fn alphabet_choice_and_errors() {
        let err = |preset, custom| alphabet(preset, custom).unwrap_err().to_string();
        assert_eq!(alphabet(None, None).map(|a| a.len()), Ok(62));
        assert_eq!(alphabet(Some("hex"), None).map(|a| a.len()), Ok(16));
        assert_eq!(alphabet(None, Some("aéz")).map(|a| a.len()), Ok(3));
        assert!(err(Some("emoji"), None).contains("must be one of alphanumeric"));
        assert!(err(None, Some("a")).contains("must have 2..=256"));
        assert!(err(None, Some("abca")).contains("repeats 'a'"));
        assert!(err(None, Some("ab\n")).contains("control"));
        let bidi = err(None, Some("ab\u{202E}"));
        assert!(bidi.contains("\\u{202e}") && bidi.contains("Cc or Cf"), "{bidi}");
        assert!(alphabet(None, Some("ab\u{200B}")).is_err(), "zero width space");
        assert!(err(Some("hex"), Some("ab")).contains("not both"));
    }

    #[test]
    fn alphabet_errors_read_in_full() {
        let err = |preset, custom| alphabet(preset, custom).unwrap_err().to_string();
        assert_eq!(
            err(Some("emoji"), None),
            "alphabet is \"emoji\", must be one of alphanumeric, printable, unambiguous, \
             letters, lowercase, digits, hex"
        );
        assert_eq!(err(None, Some("a")), "characters has 1 characters, must have 2..=256");
        assert_eq!(
            err(None, Some("abca")),
            "characters repeats 'a': each character must appear once, or it would be likelier \
             than the others"
        );
        assert_eq!(
            err(None, Some("ab\u{202E}")),
            "characters contains \\u{202e}, a control or Unicode format character (general \
             category Cc or Cf): these are invisible or reorder the text around them"
        );
        assert_eq!(
            err(Some("hex"), Some("ab")),
            "give either alphabet (a preset name) or characters (your own), not both"
        );
    }

    #[test]
    fn separators_refuse_control_and_format_characters_naming_the_rule() {
        for ok in ["", "-", " ", "_.", "·", "\u{00A0}", "\u{2014}", "été", "12345678"] {
            assert_eq!(separator(ok), Ok(ok));
        }
        assert_eq!(separator("123456789"), Err(SeparatorError::TooLong(9)));
        let refused = [
            '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200E}', '\u{200F}', '\u{061C}', '\u{200B}', '\u{200C}',
            '\u{200D}', '\u{FEFF}', '\u{0}', '\t', '\n', '\u{7F}', '\u{85}',
        ];
        for c in refused {
            let err = separator(&format!("-{c}-")).expect_err("refused");
            let shown = format!("\\u{{{:x}}}", u32::from(c));
            assert_eq!(err, SeparatorError::Invisible(shown.clone()));
            let message = err.to_string();
            assert!(message.starts_with("argument `separator` contains"), "{message}");
            assert!(message.contains(&shown) && message.contains("Cc or Cf"), "{message}");
            assert!(!message.contains(c), "the message shows the character escaped");
        }
    }
}
