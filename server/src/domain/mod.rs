//! What the gateway is for, free of gRPC, HTTP/2 and the process around it: nothing under this
//! module imports tonic, h2, hyper, [`crate::grpc`], [`crate::transport`] or [`crate::process`]
//! (`tests::the_domain_knows_no_transport` checks the imports).
//!
//! - [`pool`]: the bounded, fair, all-or-nothing pool; the at-most-once promise lives here.
//! - [`ingest`]: chunk verification (MAC, CRC, freshness), replay window, provenance, lease.
//! - [`sampling`]: unbiased integers, floats and UUIDs from bytes.
//! - [`drbg`]: DRBG output seeded from the pool, one instance per call or stream.
//! - [`auth`]: client API keys (SHA-256 digests, constant-time match), scopes; [`quota`]: each
//!   key's request, byte and stream limits, and what is left of each; [`bucket`]: the token
//!   bucket under the rate limits, readable without taking from it.
//! - [`allowance`]: byte allowances, the one type every buffer bound is made of (a key's, a
//!   connection's, the process's).
//! - [`readiness`]: ready or not, and why, from the pool level and ingest activity.
//! - [`receipts`]: the notary of verifiable draws: a receipt signed and durable in the log
//!   before its draw is answered, and signed tree heads.
//! - [`served`]: the served, discarded and tested totals, and the DRBG's served and seed bytes.
//! - [`secret`]: bytes wiped on drop; [`log_safety`]: untrusted text made safe for a log line.

pub mod allowance;
pub mod auth;
pub mod bucket;
pub mod drbg;
pub mod ingest;
pub(crate) mod log_safety;
pub mod pool;
pub mod quota;
pub mod readiness;
pub mod receipts;
pub mod sampling;
pub(crate) mod secret;
pub(crate) mod served;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `use` and path in `src/domain/` names only std, external crates that are not the
    /// gRPC/HTTP stack, and `crate::domain`: the layering `lib.rs` states, checked.
    #[test]
    fn the_domain_knows_no_transport() {
        fn visit(dir: &Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).expect("src/domain is readable") {
                let path = entry.expect("dir entry").path();
                if path.is_dir() {
                    visit(&path, found);
                    continue;
                }
                if path.ends_with("src/domain/mod.rs") {
                    // This test's own list of what is banned.
                    continue;
                }
                let text = std::fs::read_to_string(&path).expect("source is readable");
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    for banned in [
                        "tonic::",
                        "tonic_",
                        "h2::",
                        "hyper::",
                        "hyper_util",
                        "http::",
                        "crate::grpc",
                        "crate::transport",
                        "crate::process",
                    ] {
                        if code.contains(banned) {
                            found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        visit(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/domain"), &mut found);
        assert!(found.is_empty(), "the domain reaches outside itself:\n{}", found.join("\n"));
    }
}
