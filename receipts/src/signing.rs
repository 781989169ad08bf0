//! The gateway's receipt-signing key (Ed25519, RFC 8032, from ed25519-dalek) and its public half.
//!
//! Files: the signing key is a file of exactly 32 raw bytes, the RFC 8032 seed (chosen over
//! PKCS#8: nothing to parse, one length to check, and `head -c 32 /dev/urandom` or
//! [`ReceiptSigner::generate_key_file`] makes one). On Unix it must not be readable by group or
//! others. The public key file is the 32-byte key as 64 lowercase hex digits and a newline, for
//! auditors to copy around.
//!
//! A key id is SHA-256(tag || public key), tag "entropy-diode/key-id/v1": receipts and tree heads
//! name their key by it, so a verifier holding several keys (a rotated one, another gateway's)
//! picks the right one, and a receipt cannot be passed off under another key.
//!
//! Verification is `verify_strict` (no small-order keys or non-canonical signatures), so one
//! message has one valid signature encoding per key.

use std::path::Path;

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};
use zeroize::Zeroizing;

use crate::encoding::tag_prefix;
use crate::error::{KeyError, SignError, VerifyError};
use crate::receipt::{Receipt, SignedReceipt};

/// Domain tag of a key id.
pub const KEY_ID_TAG: &str = "entropy-diode/key-id/v1";
/// An Ed25519 signature's length.
pub const SIGNATURE_LEN: usize = 64;

/// A key id: SHA-256(tag || public key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub [u8; 32]);

impl KeyId {
    /// The id as 64 hex digits.
    pub fn to_hex(&self) -> String {
        hex_lower(&self.0)
    }
}

/// An Ed25519 signature's 64 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature(pub [u8; SIGNATURE_LEN]);

fn hex_lower(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn key_id_of(public: &VerifyingKey) -> KeyId {
    let mut h = Sha256::new();
    h.update(tag_prefix(KEY_ID_TAG));
    h.update(KEY_ID_TAG.as_bytes());
    h.update(public.as_bytes());
    KeyId(h.finalize().into())
}

/// The signing key. Its seed and expanded secret are wiped when it is dropped (ed25519-dalek's
/// `zeroize` feature); it has no `Debug` that could print them.
pub struct ReceiptSigner {
    key: SigningKey,
    public: PublicKey,
}

impl std::fmt::Debug for ReceiptSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiptSigner").field("key_id", &self.public.key_id.to_hex()).finish()
    }
}

impl ReceiptSigner {
    /// A signer from a 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        let key = SigningKey::from_bytes(seed);
        let verifying = key.verifying_key();
        Self { public: PublicKey { key_id: key_id_of(&verifying), key: verifying }, key }
    }

    /// Loads the seed file (exactly 32 bytes; not group- or world-readable on Unix).
    pub fn from_key_file(path: &Path) -> Result<Self, KeyError> {
        let io = |source| KeyError::Io { path: path.to_owned(), source };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(path).map_err(io)?.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(KeyError::Permissions { path: path.to_owned(), mode });
            }
        }
        let bytes = Zeroizing::new(std::fs::read(path).map_err(io)?);
        let seed: Zeroizing<[u8; 32]> =
            Zeroizing::new(bytes.as_slice().try_into().map_err(|_| KeyError::Format {
                path: path.to_owned(),
                problem: format!(
                    "holds {} bytes; a signing key file is exactly 32 raw bytes (an Ed25519 seed)",
                    bytes.len()
                ),
            })?);
        Ok(Self::from_seed(&seed))
    }

    /// Writes a fresh random seed to `path` (created, never overwritten; mode 0600 on Unix) and
    /// returns its signer.
    pub fn generate_key_file(path: &Path) -> Result<Self, KeyError> {
        use std::io::Write as _;
        let io = |source| KeyError::Io { path: path.to_owned(), source };
        let mut seed = Zeroizing::new([0u8; 32]);
        getrandom::fill(seed.as_mut_slice())
            .map_err(|e| io(std::io::Error::other(e.to_string())))?;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            opts.mode(0o600);
        }
        let mut f = opts.open(path).map_err(io)?;
        f.write_all(seed.as_slice()).map_err(io)?;
        f.sync_all().map_err(io)?;
        Ok(Self::from_seed(&seed))
    }

    /// The public half.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The key id.
    pub fn key_id(&self) -> KeyId {
        self.public.key_id
    }

    /// Signs `message` (a canonical encoding that starts with its domain tag).
    pub(crate) fn sign_bytes(&self, message: &[u8]) -> Signature {
        Signature(self.key.sign(message).to_bytes())
    }

    /// Checks the receipt's bounds and key id, and signs its canonical bytes.
    pub fn sign(&self, receipt: Receipt) -> Result<SignedReceipt, SignError> {
        receipt.validate()?;
        if receipt.key_id != self.public.key_id {
            return Err(SignError::KeyIdMismatch {
                receipt: receipt.key_id.to_hex(),
                signer: self.public.key_id.to_hex(),
            });
        }
        let encoded = receipt.encode();
        let signature = self.sign_bytes(&encoded);
        Ok(SignedReceipt::new(receipt, encoded, signature))
    }
}

/// A public key and its id: what an auditor holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    key: VerifyingKey,
    key_id: KeyId,
}

impl PublicKey {
    /// From the key's 32 bytes; refuses bytes that are not a valid Edwards point.
    pub fn from_bytes(bytes: &[u8; 32]) -> Result<Self, VerifyError> {
        let key = VerifyingKey::from_bytes(bytes).map_err(|_| VerifyError::WrongKey)?;
        Ok(Self { key_id: key_id_of(&key), key })
    }

    /// The key's 32 bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// The key id.
    pub fn key_id(&self) -> KeyId {
        self.key_id
    }

    /// The public key file's contents: 64 lowercase hex digits and a newline.
    pub fn to_file_text(&self) -> String {
        format!("{}\n", hex_lower(self.key.as_bytes()))
    }

    /// Writes the public key file (replacing it).
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        std::fs::write(path, self.to_file_text())
            .map_err(|source| KeyError::Io { path: path.to_owned(), source })
    }

    /// Reads a public key file (64 hex digits; surrounding whitespace ignored).
    pub fn from_file(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| KeyError::Io { path: path.to_owned(), source })?;
        let format =
            |problem: &str| KeyError::Format { path: path.to_owned(), problem: problem.into() };
        let hex = text.trim();
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format("a public key file holds 64 hex digits (32 bytes)"));
        }
        let mut bytes = [0u8; 32];
        for (i, out) in bytes.iter_mut().enumerate() {
            *out = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| format("not hex"))?;
        }
        Self::from_bytes(&bytes).map_err(|_| format("not a valid Ed25519 public key"))
    }

    /// Verifies `signature` over `message` strictly.
    pub(crate) fn verify_bytes(
        &self,
        message: &[u8],
        signature: &Signature,
    ) -> Result<(), VerifyError> {
        let sig = ed25519_dalek::Signature::from_bytes(&signature.0);
        self.key.verify_strict(message, &sig).map_err(|_| VerifyError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::receipt::tests::sample;

    #[test]
    fn rfc8032_test_1_signature() {
        // RFC 8032 section 7.1, TEST 1: empty message.
        let seed = hex_array("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let signer = ReceiptSigner::from_seed(&seed);
        assert_eq!(
            signer.public_key().to_bytes(),
            hex_array::<32>("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        );
        let sig = signer.sign_bytes(b"");
        assert_eq!(
            hex_lower(&sig.0),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        signer.public_key().verify_bytes(b"", &sig).unwrap();
        assert_eq!(signer.public_key().verify_bytes(b"x", &sig), Err(VerifyError::BadSignature));
    }

    #[test]
    fn sign_refuses_another_key_id_and_bad_bounds() {
        let signer = ReceiptSigner::from_seed(&[7; 32]);
        assert!(matches!(signer.sign(sample(0)), Err(SignError::KeyIdMismatch { .. })));
        let mut r = sample(0);
        r.key_id = signer.key_id();
        r.gateway_id.clear();
        assert!(matches!(signer.sign(r), Err(SignError::Invalid(_))));
    }

    #[test]
    fn key_files_round_trip_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let key_path = dir.path().join("receipts.key");
        let signer = ReceiptSigner::generate_key_file(&key_path).unwrap();
        // Never overwritten.
        assert!(ReceiptSigner::generate_key_file(&key_path).is_err());
        let again = ReceiptSigner::from_key_file(&key_path).unwrap();
        assert_eq!(again.key_id(), signer.key_id());

        let pub_path = dir.path().join("receipts.pub");
        signer.public_key().write_file(&pub_path).unwrap();
        assert_eq!(&PublicKey::from_file(&pub_path).unwrap(), signer.public_key());

        let short = dir.path().join("short.key");
        std::fs::write(&short, [1u8; 31]).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert!(matches!(ReceiptSigner::from_key_file(&short), Err(KeyError::Format { .. })));

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(matches!(
                ReceiptSigner::from_key_file(&key_path),
                Err(KeyError::Permissions { mode: 0o644, .. })
            ));
        }
        std::fs::write(&pub_path, "zz").unwrap();
        assert!(matches!(PublicKey::from_file(&pub_path), Err(KeyError::Format { .. })));
    }

    fn hex_array<const N: usize>(s: &str) -> [u8; N] {
        hex::decode(s).unwrap().try_into().unwrap()
    }
}
