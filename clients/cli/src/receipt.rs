//! `entropy receipt ...` and `--receipt FILE` on the draws: keeping a draw's receipt in a draw
//! file (docs/receipts.md, "The draw file"), checking it offline, proving it into the log, and
//! auditing a key's draws. Every check is the `entropy-receipts` verifier's, through the client
//! crate (`entropy_diode_client::{draw_file, receipted, receipt_log}`); this file reads files,
//! calls, and prints.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Subcommand;
use entropy_diode_client::draw_file::{self, DrawFile, Inclusion};
use entropy_diode_client::receipted::{rpc_name, verify_draw};
use entropy_diode_client::receipts::{
    Construction, KeyNameDigest, PublicKey, Receipt, Rpc, SignedReceipt, SignedTreeHead,
    SourceKind, TreeHead, verify,
};
use entropy_diode_client::{Check, Client, Error, Receipted, Refused, Values};

/// The receipt subcommands.
#[derive(Debug, Subcommand)]
pub enum ReceiptCommand {
    /// Checks a draw file offline, with the gateway's public key: key id, signature, serial,
    /// commitment (the file's values and salt open it), request (the values are what was
    /// asked), the inclusion proof against its signed head when the file has one, and with
    /// --key-name, which key drew. Exit 0
    /// when every check passes, 4 naming the check that refused it. Needs no gateway or key.
    Verify {
        /// The draw file (written by `--receipt FILE` on a draw).
        draw_file: PathBuf,
        /// The gateway's public key file (64 hex digits), as its operator published it.
        #[arg(long, value_name = "FILE")]
        public_key: PathBuf,
        /// Also check that the key named NAME made the draw (the receipt holds its name's
        /// digest).
        #[arg(long, value_name = "NAME")]
        key_name: Option<String>,
    },
    /// The gateway's receipt-signing public key as a public key file (64 lowercase hex digits
    /// and a newline), on stdout or to --out. Compare it with the one the operator published.
    PublicKey {
        /// Write it to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// The gateway's latest signed tree head, raw bytes, on stdout or to --out (a summary on
    /// stderr). Keep heads to check later ones against them (`entropy receipt consistency`).
    Head {
        /// Write it to FILE instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Check its signature under this public key file.
        #[arg(long, value_name = "FILE")]
        public_key: Option<PathBuf>,
    },
    /// Waits (up to --wait-ms) for a signed head covering the draw file's receipt, fetches its
    /// inclusion proof, verifies it, and adds it to the file as `inclusion`.
    Prove {
        /// The draw file; rewritten with the proof.
        draw_file: PathBuf,
        /// Verify under this public key file (default: the key the gateway serves, which only
        /// shows the gateway agrees with itself; `receipt verify --public-key` checks the rest).
        #[arg(long, value_name = "FILE")]
        public_key: Option<PathBuf>,
        /// How long to wait for a signed head that covers the receipt, in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        wait_ms: u64,
    },
    /// Fetches the consistency proof from OLD_HEAD to NEW_HEAD (signed head files, as `receipt
    /// head` writes them) and verifies it: the log of NEW_HEAD extends that of OLD_HEAD.
    Consistency {
        /// The older signed head's file.
        old_head: PathBuf,
        /// The newer signed head's file.
        new_head: PathBuf,
        /// The gateway's public key file.
        #[arg(long, value_name = "FILE")]
        public_key: PathBuf,
    },
    /// An auditor's listing: copies the log up to a signed head (needs the receipts:audit
    /// scope), checks every receipt's signature and that the copy's root is the head's, and
    /// lists the draws of the key named --key-name with serials in --from..=--to: serial,
    /// time, RPC and parameters, construction. A redraw shows up as a second line.
    Audit {
        /// The gateway's public key file.
        #[arg(long, value_name = "FILE")]
        public_key: PathBuf,
        /// The key's name (the log holds only its digest).
        #[arg(long, value_name = "NAME")]
        key_name: String,
        /// First serial to list.
        #[arg(long, default_value_t = 0, value_name = "S")]
        from: u64,
        /// Last serial to list (default: the head's last).
        #[arg(long, value_name = "E")]
        to: Option<u64>,
        /// Audit up to this signed head file (default: the gateway's latest head).
        #[arg(long, value_name = "FILE")]
        head: Option<PathBuf>,
        /// Keep the copy of the log in DIR (a new `receipts.log` there; default: a temporary
        /// directory, removed afterwards).
        #[arg(long, value_name = "DIR")]
        log_copy: Option<PathBuf>,
        /// One JSON object per draw, one per line.
        #[arg(long)]
        json: bool,
    },
}

/// Evidence that did not check out (exit code 4), naming the check.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EvidenceRefused(pub Refused);

fn refused(check: Check, reason: impl Into<String>) -> anyhow::Error {
    EvidenceRefused(Refused { check, reason: reason.into() }).into()
}

fn read_public_key(path: &Path) -> anyhow::Result<PublicKey> {
    PublicKey::from_file(path).map_err(|e| anyhow::anyhow!("--public-key {e}"))
}

fn read_draw_file(path: &Path) -> anyhow::Result<DrawFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("draw file {}: {e}", path.display()))?;
    DrawFile::parse(&text).map_err(|e| {
        EvidenceRefused(Refused {
            check: e.check,
            reason: format!("{}: {}", path.display(), e.reason),
        })
        .into()
    })
}

fn read_head(path: &Path, check: Check) -> anyhow::Result<SignedTreeHead> {
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("signed head file {}: {e}", path.display()))?;
    SignedTreeHead::from_bytes(&bytes)
        .map_err(|e| refused(check, format!("{}: not a signed tree head: {e}", path.display())))
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so a reader never
/// sees half a file and a failure leaves the old one.
fn replace_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Unix milliseconds as RFC 3339 (UTC), or the number when out of range.
pub fn time_of(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| format!("{ms} ms after the epoch"))
}

fn kinds(kinds: &[SourceKind]) -> String {
    let names: Vec<&str> = kinds
        .iter()
        .map(|k| match k {
            SourceKind::Quantum => "QUANTUM",
            SourceKind::Hardware => "HARDWARE",
            SourceKind::Os => "OS",
        })
        .collect();
    names.join("+")
}

/// The RPC's parameters as `name=value` pairs, in the receipt's order.
fn params(rpc: &Rpc) -> Vec<(&'static str, serde_json::Value)> {
    match *rpc {
        Rpc::GetRandom { num_bytes } => vec![("num_bytes", num_bytes.into())],
        Rpc::StreamRandom { chunk_bytes, total_bytes, offset_bytes, message_bytes } => vec![
            ("chunk_bytes", chunk_bytes.into()),
            ("total_bytes", total_bytes.into()),
            ("offset_bytes", offset_bytes.into()),
            ("message_bytes", message_bytes.into()),
        ],
        Rpc::GetIntegers { min, max, count } => {
            vec![("min", min.into()), ("max", max.into()), ("count", count.into())]
        }
        Rpc::GetFloats { count } | Rpc::GetUuids { count } => vec![("count", count.into())],
    }
}

fn request_text(r: &Receipt) -> String {
    let mut text = rpc_name(&r.request.rpc).to_owned();
    for (name, value) in params(&r.request.rpc) {
        text.push_str(&format!(" {name}={value}"));
    }
    if !r.request.accept_kinds.is_empty() {
        text.push_str(&format!(" accept={}", kinds(&r.request.accept_kinds)));
    }
    text
}

fn construction_name(c: &Construction) -> &'static str {
    match c {
        Construction::Raw => "RAW",
        Construction::Drbg(_) => "DRBG",
        Construction::DrbgPredictionResistant(_) => "DRBG_PREDICTION_RESISTANT",
    }
}

fn construction_text(c: &Construction) -> String {
    match c {
        Construction::Raw => "RAW (pool bytes as delivered)".into(),
        Construction::Drbg(d) | Construction::DrbgPredictionResistant(d) => format!(
            "{} (instance {}, {} bits, {} reseed(s), {} bytes since, seeded with {} pool bytes)",
            construction_name(c),
            hex::encode(d.instance_id),
            d.security_strength_bits,
            d.reseed_count,
            d.bytes_since_reseed,
            d.seed_bytes
        ),
    }
}

fn values_text(v: &Values) -> String {
    format!("{} {}", v.len(), v.kind())
}

/// Prints a verified receipt's statement.
fn print_statement(out: &mut impl Write, r: &Receipt) -> std::io::Result<()> {
    let p = &r.provenance;
    writeln!(out, "issued:         {} by gateway {}", time_of(r.issued_at_unix_ms), r.gateway_id)?;
    writeln!(out, "key digest:     {}", hex::encode(r.key_name_digest.0))?;
    writeln!(out, "asked:          {}", request_text(r))?;
    writeln!(out, "construction:   {}", construction_text(&p.construction))?;
    writeln!(
        out,
        "provenance:     {}{} from {} chunk(s) of {} ({}/{}#{} .. {}/{}#{}), oldest byte {} ms in \
         the pool",
        kinds(&p.kinds),
        if p.mixed { " (mixed)" } else { "" },
        p.chunk_count,
        p.collector_ids.join(", "),
        p.first_chunk.collector_id,
        p.first_chunk.epoch,
        p.first_chunk.sequence,
        p.last_chunk.collector_id,
        p.last_chunk.epoch,
        p.last_chunk.sequence,
        p.oldest_byte_age_ms
    )
}

/// `entropy receipt verify`: every offline check, printing what each established.
pub fn verify_file(
    out: &mut impl Write,
    path: &Path,
    key_file: &Path,
    key_name: Option<&str>,
) -> anyhow::Result<()> {
    let key = read_public_key(key_file)?;
    let file = read_draw_file(path)?;
    let verified = file.verify(&key).map_err(EvidenceRefused)?;
    let r = &verified.receipt.receipt;
    if let Some(name) = key_name
        && KeyNameDigest::of(name) != r.key_name_digest
    {
        return Err(refused(
            Check::KeyName,
            format!("the draw was not made by the key named {name:?} (its digest differs)"),
        ));
    }
    writeln!(out, "draw file:      ok ({}, {})", path.display(), values_text(&file.values))?;
    writeln!(out, "key id:         ok ({})", key.key_id().to_hex())?;
    writeln!(out, "signature:      ok")?;
    writeln!(out, "serial:         ok ({})", r.serial)?;
    writeln!(out, "commitment:     ok (the file's values and salt open it)")?;
    writeln!(
        out,
        "request:        ok (the values are what {} asked for)",
        rpc_name(&r.request.rpc)
    )?;
    match &verified.head {
        Some(h) => writeln!(
            out,
            "inclusion:      ok (leaf {} of the signed head of size {}, signed {})",
            r.serial,
            h.size,
            time_of(h.timestamp_unix_ms)
        )?,
        None => writeln!(
            out,
            "inclusion:      not checked: the file has no inclusion proof (`entropy receipt \
             prove` adds one)"
        )?,
    }
    if let Some(name) = key_name {
        writeln!(out, "key name:       ok (the draw was made by the key named {name:?})")?;
    }
    print_statement(out, r)?;
    writeln!(out, "values:         {}", values_list(&file.values))?;
    Ok(())
}

/// The values as text: bytes as hex, the others comma-separated; the first 64 only.
fn values_list(v: &Values) -> String {
    const SHOWN: usize = 64;
    let more = v.len().saturating_sub(SHOWN);
    let mut text = match v {
        Values::Bytes(b) => hex::encode(&b[..b.len().min(SHOWN)]),
        Values::Integers(x) => join(x.iter().take(SHOWN)),
        Values::Floats(x) => join(x.iter().take(SHOWN)),
        Values::Uuids(x) => join(x.iter().take(SHOWN)),
    };
    if more > 0 {
        text.push_str(&format!(" ... and {more} more"));
    }
    text
}

fn join<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    items.map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
}

/// Creates the draw file before the draw (never over an existing one: it may be another draw's
/// evidence), so a path that cannot be written costs no draw.
pub fn create_draw_file(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!(
                "--receipt {}: the file exists, and a draw file is never overwritten (nothing \
                 drawn)",
                path.display()
            )
        } else {
            anyhow::anyhow!("--receipt {}: {e} (nothing drawn)", path.display())
        }
    })
}

/// Draws with a receipt and keeps it in `path`: the file is created first, the draw made, the
/// draw file written and synced, then the receipt checked as far as it can be without the
/// gateway's key (it decodes, states the serial it carries, and the values and salt open its
/// commitment). A failed draw removes the empty file.
pub async fn draw_to_file<T: Clone + Into<Values>>(
    path: &Path,
    draw: impl Future<Output = Result<Receipted<T>, Error>>,
) -> anyhow::Result<Receipted<T>> {
    let mut file = create_draw_file(path)?;
    let drawn = match draw.await {
        Ok(d) => d,
        Err(e) => {
            drop(file);
            let _ = std::fs::remove_file(path);
            return Err(e.into());
        }
    };
    let json = drawn.to_draw_file().to_json();
    file.write_all(json.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| anyhow::anyhow!("--receipt {}: {e}", path.display()))?;
    let signed = SignedReceipt::from_bytes(&drawn.receipt.signed_receipt)
        .map_err(|e| refused(Check::Signature, format!("the gateway's receipt: {e}")))?;
    if signed.receipt.serial != drawn.receipt.serial {
        return Err(refused(
            Check::Serial,
            "the gateway's receipt is not for the serial it stated",
        ));
    }
    let values: Values = drawn.values.clone().into();
    values
        .with_served(|v| verify::open_commitment(&signed.receipt, v, &drawn.receipt.salt))
        .map_err(|e| refused(Check::Commitment, format!("the gateway's receipt: {e}")))?;
    eprintln!(
        "receipt: serial {} kept in {} (`entropy receipt verify {} --public-key KEY` checks it)",
        drawn.receipt.serial,
        path.display(),
        path.display()
    );
    Ok(drawn)
}

/// The online receipt subcommands.
pub async fn run(command: ReceiptCommand, client: &Client) -> anyhow::Result<()> {
    let log = client.receipt_log();
    let mut out = std::io::stdout().lock();
    match command {
        ReceiptCommand::Verify { draw_file, public_key, key_name } => {
            verify_file(&mut out, &draw_file, &public_key, key_name.as_deref())?;
        }
        ReceiptCommand::PublicKey { out: file } => {
            let served = log.public_key().await?;
            let text = served.key.to_file_text();
            match file {
                Some(path) => replace_file(&path, text.as_bytes())?,
                None => out.write_all(text.as_bytes())?,
            }
            eprintln!(
                "public key of gateway {}: key id {}",
                served.gateway_id,
                served.key.key_id().to_hex()
            );
        }
        ReceiptCommand::Head { out: file, public_key } => {
            let head = log.signed_tree_head().await?;
            if let Some(path) = public_key {
                head.verify(&read_public_key(&path)?)
                    .map_err(|e| refused(Check::SignedHead, e.to_string()))?;
            }
            match file {
                Some(path) => replace_file(&path, &head.to_bytes())?,
                None => out.write_all(&head.to_bytes())?,
            }
            eprintln!("{}", head_text(&head.head));
        }
        ReceiptCommand::Prove { draw_file, public_key, wait_ms } => {
            prove(&mut out, client, &draw_file, public_key.as_deref(), wait_ms).await?;
        }
        ReceiptCommand::Consistency { old_head, new_head, public_key } => {
            let key = read_public_key(&public_key)?;
            let old = read_head(&old_head, Check::Consistency)?;
            let new = read_head(&new_head, Check::Consistency)?;
            for (path, head) in [(&old_head, &old), (&new_head, &new)] {
                head.verify(&key)
                    .map_err(|e| refused(Check::Consistency, format!("{}: {e}", path.display())))?;
            }
            let (a, b) = (old.head.size, new.head.size);
            if a > b {
                anyhow::bail!(
                    "OLD_HEAD has size {a}, above NEW_HEAD's {b}: give the older head first"
                );
            }
            let proof = log.consistency_proof(a, b).await?;
            verify::verify_consistency(&old, &new, &proof, &key)
                .map_err(|e| refused(Check::Consistency, format!("size {a} -> {b}: {e}")))?;
            writeln!(
                out,
                "consistency:    ok (the log of size {b}, signed {}, extends the log of size {a}, \
                 signed {}; {} proof hashes)",
                time_of(new.head.timestamp_unix_ms),
                time_of(old.head.timestamp_unix_ms),
                proof.len()
            )?;
        }
        ReceiptCommand::Audit { public_key, key_name, from, to, head, log_copy, json } => {
            let key = read_public_key(&public_key)?;
            let head = match head {
                Some(path) => read_head(&path, Check::Log)?,
                None => log.signed_tree_head().await?,
            };
            let size = head.head.size;
            let to = to.unwrap_or(size.saturating_sub(1));
            let serials = from..to.saturating_add(1);
            let temp;
            let dir = match &log_copy {
                Some(dir) => {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| anyhow::anyhow!("--log-copy {}: {e}", dir.display()))?;
                    dir.as_path()
                }
                None => {
                    temp = tempfile::tempdir()?;
                    temp.path()
                }
            };
            let digest = KeyNameDigest::of(&key_name);
            let entries =
                log.audit(dir, &head, &key, &digest, serials).await.map_err(|e| match e {
                    entropy_diode_client::receipt_log::AuditError::Refused(r) => {
                        EvidenceRefused(r).into()
                    }
                    other => anyhow::Error::from(other),
                })?;
            for e in &entries {
                let r = &e.receipt.receipt;
                if json {
                    serde_json::to_writer(&mut out, &audit_json(r))?;
                    writeln!(out)?;
                } else {
                    writeln!(
                        out,
                        "{:>8}  {}  {}  {}",
                        e.serial,
                        time_of(r.issued_at_unix_ms),
                        request_text(r),
                        construction_name(&r.provenance.construction)
                    )?;
                }
            }
            eprintln!(
                "audit: {size} receipts up to the signed head of size {size} (signed {}): every \
                 signature and the root check out; {} draw(s) of key {key_name:?} in serials \
                 {from}..={to}",
                time_of(head.head.timestamp_unix_ms),
                entries.len()
            );
        }
    }
    out.flush()?;
    Ok(())
}

fn head_text(h: &TreeHead) -> String {
    format!(
        "signed tree head: size {}, signed {}, key id {}",
        h.size,
        time_of(h.timestamp_unix_ms),
        h.key_id.to_hex()
    )
}

fn audit_json(r: &Receipt) -> serde_json::Value {
    let params: serde_json::Map<String, serde_json::Value> =
        params(&r.request.rpc).into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let accept: Vec<String> = r.request.accept_kinds.iter().map(|k| kinds(&[*k])).collect();
    serde_json::json!({
        "serial": r.serial,
        "issued_at_unix_ms": r.issued_at_unix_ms,
        "issued_at": time_of(r.issued_at_unix_ms),
        "gateway_id": r.gateway_id,
        "rpc": rpc_name(&r.request.rpc),
        "params": params,
        "accept_kinds": accept,
        "construction": construction_name(&r.provenance.construction),
        "kinds": r.provenance.kinds.iter().map(|k| kinds(&[*k])).collect::<Vec<_>>(),
        "commitment": hex::encode(r.commitment.0),
    })
}

/// `entropy receipt prove`.
async fn prove(
    out: &mut impl Write,
    client: &Client,
    path: &Path,
    key_file: Option<&Path>,
    wait_ms: u64,
) -> anyhow::Result<()> {
    let log = client.receipt_log();
    let mut file = read_draw_file(path)?;
    let key = match key_file {
        Some(k) => read_public_key(k)?,
        None => {
            let served = log.public_key().await?;
            eprintln!(
                "prove: checking under the key gateway {} serves (key id {}); check the file \
                 with `entropy receipt verify --public-key` against the published key",
                served.gateway_id,
                served.key.key_id().to_hex()
            );
            served.key
        }
    };
    let receipt = verify_draw(&file.receipt, &file.values, &key).map_err(EvidenceRefused)?;
    let serial = receipt.receipt.serial;
    let head = log.wait_for_head(serial, Duration::from_millis(wait_ms)).await?;
    let size = head
        .verify(&key)
        .map_err(|e| refused(Check::Inclusion, format!("the signed head: {e}")))?
        .size;
    let hashes = log.inclusion_proof(serial, size).await?;
    let inclusion = Inclusion { signed_tree_head: head.to_bytes(), hashes };
    draw_file::verify_inclusion(&receipt, &inclusion, &key).map_err(EvidenceRefused)?;
    file.inclusion = Some(inclusion);
    replace_file(path, file.to_json().as_bytes())?;
    writeln!(
        out,
        "inclusion:      ok (leaf {serial} of the signed head of size {size}, signed {}); added \
         to {}",
        time_of(head.head.timestamp_unix_ms),
        path.display()
    )?;
    Ok(())
}
