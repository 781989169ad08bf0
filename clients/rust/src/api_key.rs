//! API keys are checked before use (clients/README.md, "API keys"), and never echoed.

use crate::error::Error;

/// The longest key the gateway accepts, in bytes.
pub const MAX_KEY_BYTES: usize = 512;

/// `Ok` when `key` is 1..=[`MAX_KEY_BYTES`] visible ASCII characters (0x21..=0x7e). The error
/// says which rule and where, never the key.
pub fn check(key: &str) -> Result<(), Error> {
    if key.is_empty() {
        return Err(Error::Config("API key is missing: pass one, or set ENTROPY_API_KEY".into()));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::Config(format!(
            "API key is {} bytes, at most {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    if let Some((at, c)) = key.char_indices().find(|&(_, c)| !('\x21'..='\x7e').contains(&c)) {
        let what = match c {
            '\n' | '\r' => "a line break",
            ' ' => "a space",
            _ => "a character",
        };
        return Err(Error::Config(format!(
            "API key holds {what} at byte {at}: keys are 1 to {MAX_KEY_BYTES} visible ASCII \
             characters (0x21-0x7e); check for a trailing newline"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_never_echoed() {
        let secret = "s3cret-key-value";
        check(secret).expect("a good key");
        check(&"k".repeat(MAX_KEY_BYTES)).expect("the longest key");
        let cases = [
            (format!("{secret}\n"), "a line break at byte 16"),
            (format!("{secret} "), "a space at byte 16"),
            (format!("\t{secret}"), "a character at byte 0"),
            (format!("{secret}é"), "a character at byte 16"),
            ("k".repeat(MAX_KEY_BYTES + 1), "at most 512"),
            (String::new(), "missing"),
        ];
        for (key, why) in cases {
            let err = check(&key).expect_err(why).to_string();
            assert!(err.contains(why), "{err}");
            assert!(!err.contains(secret) && !err.contains("kkkk"), "echoes the key: {err}");
        }
    }
}
