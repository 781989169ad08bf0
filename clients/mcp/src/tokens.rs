//! Bearer tokens for the HTTP transport, stored as SHA-256 digests (like the gateway's keys).
//!
//! A presented token is hashed and compared with every stored digest in constant time
//! (`subtle`), so timing says nothing about which token, or how much of one, matched. The file
//! never holds a token, only its digest.
//!
//! Tokens file (TOML):
//!
//! ```toml
//! [[token]]
//! name = "laptop"                                  # shown in logs, never the token
//! sha256 = "<64 hex digits: SHA-256 of the token>"
//! ```
//!
//! `entropy-mcp token --name laptop` makes a token, prints it once, and prints its entry.

use std::path::Path;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// Longest token accepted in a request, in bytes; longer ones are refused without hashing.
pub const MAX_TOKEN_BYTES: usize = 512;

/// The accepted tokens.
#[derive(Clone)]
pub struct Tokens {
    entries: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.entries.iter().map(|(n, _)| n).collect();
        f.debug_struct("Tokens").field("names", &names).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensFile {
    #[serde(default)]
    token: Vec<TokenEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenEntry {
    name: String,
    sha256: String,
}

impl Tokens {
    /// Loads a tokens file; the error names the file and the entry at fault.
    pub fn load_file(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
        let file: TokensFile = toml::from_str(&text).map_err(|e| format!("{shown}: {e}"))?;
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for entry in file.token {
            if !valid_name(&entry.name) {
                return Err(format!(
                    "{shown}: token {:?}: name must be 1..=64 characters of [A-Za-z0-9._-]",
                    entry.name
                ));
            }
            if entries.iter().any(|(n, _)| *n == entry.name) {
                return Err(format!("{shown}: token {:?}: name is used twice", entry.name));
            }
            let digest = hex::decode(entry.sha256.trim())
                .ok()
                .and_then(|d| <[u8; 32]>::try_from(d).ok())
                .ok_or_else(|| {
                    format!("{shown}: token {:?}: sha256 must be 64 hex digits", entry.name)
                })?;
            entries.push((entry.name, digest));
        }
        if entries.is_empty() {
            return Err(format!("{shown}: no [[token]] entries"));
        }
        Ok(Self { entries })
    }

    /// The name of the token `presented`, if it is one of ours.
    pub fn authenticate(&self, presented: &[u8]) -> Option<&str> {
        if presented.is_empty() || presented.len() > MAX_TOKEN_BYTES {
            return None;
        }
        let wanted: [u8; 32] = Sha256::digest(presented).into();
        // Compare with every entry whatever matches, selecting the match without branching.
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, (_, digest)) in self.entries.iter().enumerate() {
            let hit = digest.ct_eq(&wanted);
            index.conditional_assign(&(i as u32), hit);
            found |= hit;
        }
        bool::from(found).then(|| self.entries[index as usize].0.as_str())
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no token (never, once loaded).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A new token (`emt_` + 64 hex digits from the OS RNG: a local secret must not depend on the
/// gateway) and its tokens-file entry.
pub fn generate(name: &str) -> Result<(String, String), String> {
    if !valid_name(name) {
        return Err("name must be 1..=64 characters of [A-Za-z0-9._-]".into());
    }
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| format!("cannot read the OS RNG: {e}"))?;
    let token = format!("emt_{}", hex::encode(raw));
    let entry = format!(
        "[[token]]\nname = \"{name}\"\nsha256 = \"{}\"\n",
        hex::encode(Sha256::digest(token.as_bytes()))
    );
    Ok((token, entry))
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Tokens, String> {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), text).expect("write");
        Tokens::load_file(file.path())
    }

    fn entry(name: &str, token: &str) -> String {
        format!(
            "[[token]]\nname = \"{name}\"\nsha256 = \"{}\"\n",
            hex::encode(Sha256::digest(token))
        )
    }

    #[test]
    fn authenticates_by_token_and_names_it() {
        let tokens = load(&(entry("a", "token-a") + &entry("b", "token-b"))).expect("valid");
        assert_eq!(tokens.authenticate(b"token-a"), Some("a"));
        assert_eq!(tokens.authenticate(b"token-b"), Some("b"));
        assert_eq!(tokens.authenticate(b"token-b "), None);
        assert_eq!(tokens.authenticate(b""), None);
        assert_eq!(tokens.authenticate(&[b'x'; MAX_TOKEN_BYTES + 1]), None);
        assert!(!format!("{tokens:?}").contains(&hex::encode(Sha256::digest("token-a"))));
    }

    #[test]
    fn bad_files_are_refused_with_the_entry_named() {
        assert!(load("").unwrap_err().contains("no [[token]] entries"));
        assert!(
            load("[[token]]\nname = \"x\"\nsha256 = \"abc\"\n").unwrap_err().contains("64 hex")
        );
        assert!(load(&(entry("x", "1") + &entry("x", "2"))).unwrap_err().contains("used twice"));
        assert!(load(&entry("bad name", "1")).unwrap_err().contains("[A-Za-z0-9._-]"));
        assert!(load("[[token]]\nname = \"x\"\nsecret = \"y\"\n").is_err());
    }

    #[test]
    fn generated_tokens_load_and_authenticate() {
        let (token, entry) = generate("laptop").expect("token");
        assert!(token.starts_with("emt_") && token.len() == 68);
        assert!(!entry.contains(&token), "the entry never holds the token");
        let tokens = load(&entry).expect("the printed entry is valid");
        assert_eq!(tokens.authenticate(token.as_bytes()), Some("laptop"));
        assert!(generate("no spaces").is_err());
    }
}
