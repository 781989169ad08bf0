//! The gateway's notary of verifiable draws (issue 32): it signs a receipt for a draw, appends
//! it to the receipt log and returns it once durable; it signs tree heads of the log. The
//! encodings, the log and the checks are `entropy-receipts`' (docs/receipts.md); this module
//! holds what the gateway adds: its key on disk, its id, the latest signed head, and the order
//! of things (a receipt is durable before the draw is answered).

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use entropy_receipts::{
    Commitment, KeyNameDigest, LogConfig, LogError, Provenance, PublicKey, Receipt, ReceiptLog,
    ReceiptSigner, Recovery, Request, Salt, ServedValues, SignedReceipt, SignedTreeHead,
    SyncPolicy,
};

/// When a receipt is durable before its draw is answered (`receipts_sync`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum ReceiptSync {
    /// Group commit: concurrent draws share one `fdatasync`.
    #[default]
    Group,
    /// One `fdatasync` per receipt.
    EveryAppend,
}

/// Where the notary keeps its files and how it syncs them.
#[derive(Debug, Clone)]
pub struct NotaryConfig {
    /// The log's directory (`receipts_dir`).
    pub dir: PathBuf,
    /// The signing key (`receipts_key_file`, default `<dir>/signing.key`, made if missing).
    pub key_file: PathBuf,
    /// Where the public key is written at start (`receipts_public_key_file`).
    pub public_key_file: PathBuf,
    /// The fsync policy.
    pub sync: ReceiptSync,
    /// The gateway's id, in every receipt.
    pub gateway_id: String,
}

/// Why the notary could not start.
#[derive(Debug, thiserror::Error)]
pub enum NotaryError {
    /// The signing key could not be read or made.
    #[error("receipts_key_file: {0}")]
    Key(#[from] entropy_receipts::KeyError),
    /// The public key file could not be written.
    #[error("receipts_public_key_file: {0}")]
    PublicKey(entropy_receipts::KeyError),
    /// The log could not be opened (locked by another process, damaged, unreadable).
    #[error("receipts_dir: {0}")]
    Log(#[from] LogError),
    /// The log holds receipts signed by another key than the signing key's: a restart with a
    /// new key (or a lost key file) on the same log would leave a log no one key verifies.
    #[error(
        "receipts_dir: {dir} holds receipts signed by key id {logged}, and the signing key \
         (receipts_key_file) has key id {key}: a log has one key; give a new key a new \
         receipts_dir, or restore the key"
    )]
    OtherKey {
        /// The log's directory.
        dir: PathBuf,
        /// The key id of the log's last receipt.
        logged: String,
        /// The signing key's key id.
        key: String,
    },
    /// The head file could not be written.
    #[error("receipts_dir: cannot write {path}: {source}")]
    HeadFile {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Why a receipt was not issued: the draw must not be answered.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// The log refused or failed the append.
    #[error("the receipt log cannot take the receipt: {0}")]
    Log(#[from] LogError),
    /// The OS random number generator failed to give a salt.
    #[error("no salt from the OS random number generator: {0}")]
    Salt(String),
}

/// A receipt issued, durable in the log: for the caller, with the salt only it gets.
#[derive(Debug)]
pub struct Issued {
    /// The signed receipt.
    pub receipt: SignedReceipt,
    /// The commitment's salt (wiped when dropped).
    pub salt: Salt,
}

/// The gateway's signer and receipt log.
pub struct Notary {
    log: ReceiptLog,
    signer: ReceiptSigner,
    gateway_id: String,
    head_file: PathBuf,
    latest: RwLock<SignedTreeHead>,
    /// Receipts issued, and appends that failed, since the start.
    issued: AtomicU64,
    failed: AtomicU64,
}

impl std::fmt::Debug for Notary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notary")
            .field("dir", &self.log.dir())
            .field("key_id", &self.signer.key_id().to_hex())
            .finish_non_exhaustive()
    }
}

/// The file the latest signed head is written to, in the log's directory.
pub const HEAD_FILE: &str = "head.sth";

impl Notary {
    /// Opens the log (recovering a torn tail), loads the signing key (making it at the first
    /// start), writes the public key file, and signs a first head. Everything a start needs to
    /// refuse, it refuses here, before the gateway binds.
    pub fn open(config: &NotaryConfig, now_unix_ms: i64) -> Result<(Self, Recovery), NotaryError> {
        let signer = if config.key_file.exists() {
            ReceiptSigner::from_key_file(&config.key_file)?
        } else {
            if let Some(parent) = config.key_file.parent() {
                std::fs::create_dir_all(parent).map_err(|source| {
                    entropy_receipts::KeyError::Io { path: parent.to_owned(), source }
                })?;
            }
            ReceiptSigner::generate_key_file(&config.key_file)?
        };
        let sync = match config.sync {
            ReceiptSync::Group => SyncPolicy::Group,
            ReceiptSync::EveryAppend => SyncPolicy::EveryAppend,
        };
        let (log, recovery) = ReceiptLog::open(&LogConfig { dir: config.dir.clone(), sync })?;
        Self::check_key(&log, &signer)?;
        signer.public_key().write_file(&config.public_key_file).map_err(NotaryError::PublicKey)?;
        let first = log.signed_head(&signer, now_unix_ms)?;
        let notary = Self {
            head_file: config.dir.join(HEAD_FILE),
            log,
            signer,
            gateway_id: config.gateway_id.clone(),
            latest: RwLock::new(first),
            issued: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        };
        notary.write_head(&first)?;
        Ok((notary, recovery))
    }

    /// Refuses a signing key that is not the one the log's receipts name (its last receipt's:
    /// every receipt of a log names one key id, as the log only appends under one key).
    fn check_key(log: &ReceiptLog, signer: &ReceiptSigner) -> Result<(), NotaryError> {
        let size = log.size();
        if size == 0 {
            return Ok(());
        }
        let last = log.read_signed(size - 1, size, (1, usize::MAX))?;
        let Some(bytes) = last.first() else { return Ok(()) };
        let logged = SignedReceipt::from_bytes(bytes)
            .map_err(|e| LogError::Corrupt {
                path: log.dir().join(entropy_receipts::record::LOG_FILE),
                offset: 0,
                problem: format!("the last receipt does not decode: {e}"),
            })?
            .receipt
            .key_id;
        if logged != signer.key_id() {
            return Err(NotaryError::OtherKey {
                dir: log.dir().to_owned(),
                logged: logged.to_hex(),
                key: signer.key_id().to_hex(),
            });
        }
        Ok(())
    }

    /// Refuses a draw before anything is drawn when its receipt could not be written.
    pub fn check_writable(&self) -> Result<(), LogError> {
        self.log.check_writable()
    }

    /// Signs and appends the receipt of a draw of `values` by `key_name` with `request` and
    /// `provenance`, at `now_unix_ms`. Blocks until the receipt is durable (an fsync): call it
    /// off the async workers. Only on `Ok` may the draw be answered.
    pub fn issue(
        &self,
        key_name: &str,
        (request, provenance): (Request, Provenance),
        values: ServedValues<'_>,
        now_unix_ms: i64,
    ) -> Result<Issued, IssueError> {
        let issued = self.append(key_name, (request, provenance), values, now_unix_ms);
        let counter = if issued.is_ok() { &self.issued } else { &self.failed };
        counter.fetch_add(1, Ordering::Relaxed);
        issued
    }

    fn append(
        &self,
        key_name: &str,
        (request, provenance): (Request, Provenance),
        values: ServedValues<'_>,
        now_unix_ms: i64,
    ) -> Result<Issued, IssueError> {
        let salt = Salt::random().map_err(|e| IssueError::Salt(e.to_string()))?;
        let commitment = Commitment::commit(values, &salt);
        let appended = self.log.append_with(|serial| {
            self.signer.sign(Receipt {
                serial,
                issued_at_unix_ms: now_unix_ms,
                gateway_id: self.gateway_id.clone(),
                key_name_digest: KeyNameDigest::of(key_name),
                request,
                provenance,
                commitment,
                key_id: self.signer.key_id(),
            })
        })?;
        Ok(Issued { receipt: appended.receipt, salt })
    }

    /// Signs a head of the log as it is now if it grew since the latest head, keeps it as the
    /// latest and writes it to `head.sth`. Returns the latest head either way.
    pub fn sign_head(&self, now_unix_ms: i64) -> Result<SignedTreeHead, NotaryError> {
        let latest = self.latest_head();
        if self.log.size() == latest.head.size {
            return Ok(latest);
        }
        let head = self.log.signed_head(&self.signer, now_unix_ms)?;
        self.write_head(&head)?;
        let mut slot = self.latest.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if head.head.size > slot.head.size {
            *slot = head;
        }
        Ok(*slot)
    }

    /// Receipts issued, and receipts that could not be written, since the start.
    pub fn counts(&self) -> (u64, u64) {
        (self.issued.load(Ordering::Relaxed), self.failed.load(Ordering::Relaxed))
    }

    /// The latest signed head.
    pub fn latest_head(&self) -> SignedTreeHead {
        *self.latest.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `head` to `head.sth` (a temporary file renamed over it, so a reader never sees
    /// half a head).
    fn write_head(&self, head: &SignedTreeHead) -> Result<(), NotaryError> {
        let tmp = self.head_file.with_extension("sth.tmp");
        let err = |source| NotaryError::HeadFile { path: self.head_file.clone(), source };
        std::fs::write(&tmp, head.to_bytes()).map_err(err)?;
        std::fs::rename(&tmp, &self.head_file).map_err(err)
    }

    /// The signing key's public half.
    pub fn public_key(&self) -> &PublicKey {
        self.signer.public_key()
    }

    /// The gateway's id, as in its receipts.
    pub fn gateway_id(&self) -> &str {
        &self.gateway_id
    }

    /// The log, for proofs and listings (bounded by the latest signed head by the caller).
    pub fn log(&self) -> &ReceiptLog {
        &self.log
    }

    /// The log's directory.
    pub fn dir(&self) -> &Path {
        self.log.dir()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use entropy_receipts::{ChunkRef, Construction, Rpc, SourceKind};

    use super::*;

    fn config(dir: &Path) -> NotaryConfig {
        NotaryConfig {
            dir: dir.join("log"),
            key_file: dir.join("keys/signing.key"),
            public_key_file: dir.join("public.key"),
            sync: ReceiptSync::EveryAppend,
            gateway_id: "gw-1".into(),
        }
    }

    fn draw(notary: &Notary, values: &[i64]) -> Issued {
        let chunk =
            ChunkRef { collector_id: "c".into(), epoch: 1, sequence: 2, signed_at_unix_ms: 3 };
        let provenance = Provenance {
            kinds: vec![SourceKind::Os],
            mixed: false,
            collector_ids: vec!["c".into()],
            first_chunk: chunk.clone(),
            last_chunk: chunk,
            chunk_count: 1,
            oldest_byte_age_ms: 0,
            construction: Construction::Raw,
        };
        let rpc = Rpc::GetIntegers { min: 0, max: 9, count: values.len() as u32 };
        let request = Request { rpc, accept_kinds: vec![] };
        notary.issue("alice", (request, provenance), ServedValues::Integers(values), 5).unwrap()
    }

    #[test]
    fn the_key_is_made_once_and_kept_and_heads_follow_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let (notary, recovery) = Notary::open(&config(dir.path()), 1).unwrap();
        assert_eq!(recovery.receipts, 0);
        let mode = std::fs::metadata(dir.path().join("keys/signing.key")).unwrap().permissions();
        assert_eq!(mode.mode() & 0o777, 0o600);
        let published = PublicKey::from_file(&dir.path().join("public.key")).unwrap();
        assert_eq!(published.to_bytes(), notary.public_key().to_bytes());

        let a = draw(&notary, &[1, 2]);
        let b = draw(&notary, &[3]);
        assert_eq!((a.receipt.receipt.serial, b.receipt.receipt.serial), (0, 1));
        assert_eq!(b.receipt.receipt.gateway_id, "gw-1");
        assert_eq!(notary.counts(), (2, 0));
        assert_eq!(notary.latest_head().head.size, 0, "no head signed since the first");
        let head = notary.sign_head(7).unwrap();
        assert_eq!(head.head.size, 2);
        head.verify(notary.public_key()).unwrap();
        let file = std::fs::read(dir.path().join("log").join(HEAD_FILE)).unwrap();
        assert_eq!(file, head.to_bytes(), "the head file is the latest head");
        // Unchanged log: the same head, not a new signature.
        assert_eq!(notary.sign_head(9).unwrap().to_bytes(), head.to_bytes());
        let key = notary.public_key().to_bytes();
        drop(notary);

        let (notary, recovery) = Notary::open(&config(dir.path()), 10).unwrap();
        assert_eq!(recovery.receipts, 2);
        assert_eq!(notary.public_key().to_bytes(), key, "the key made at the first start");
        assert_eq!(notary.latest_head().head.size, 2, "the first head covers the log");
        assert_eq!(draw(&notary, &[4]).receipt.receipt.serial, 2);
    }

    #[test]
    fn a_log_refuses_another_signing_key_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let (notary, _) = Notary::open(&config(dir.path()), 1).unwrap();
        draw(&notary, &[1]);
        drop(notary);
        // The key file lost (a new one would be made) or replaced: refused, naming both ids.
        std::fs::remove_file(dir.path().join("keys/signing.key")).unwrap();
        let err = Notary::open(&config(dir.path()), 2).unwrap_err();
        assert!(matches!(err, NotaryError::OtherKey { .. }), "{err}");
        assert!(err.to_string().contains("receipts_key_file"), "{err}");
        // An empty log takes any key.
        let empty = tempfile::tempdir().unwrap();
        Notary::open(&config(empty.path()), 3).unwrap();
    }

    #[test]
    fn a_second_notary_on_the_same_log_and_a_readable_key_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_first, _) = Notary::open(&config(dir.path()), 1).unwrap();
        let err = Notary::open(&config(dir.path()), 1).unwrap_err();
        assert!(matches!(err, NotaryError::Log(LogError::Locked(_))), "{err}");
        assert!(err.to_string().starts_with("receipts_dir:"), "{err}");

        let other = tempfile::tempdir().unwrap();
        let c = config(other.path());
        std::fs::create_dir_all(c.key_file.parent().unwrap()).unwrap();
        std::fs::write(&c.key_file, [7u8; 32]).unwrap();
        std::fs::set_permissions(&c.key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Notary::open(&c, 1).unwrap_err();
        assert!(
            err.to_string().contains("receipts_key_file") && err.to_string().contains("chmod 600"),
            "{err}"
        );
    }
}
