//! The bounded label values of the gateway's series: methods, key labels, refusal reasons.
//! Each is an enum, so a label can only take a value the docs table lists.

/// The EntropyService methods, as they appear in the `method` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GetRandom.
    GetRandom,
    /// StreamRandom.
    StreamRandom,
    /// GetIntegers.
    GetIntegers,
    /// GetFloats.
    GetFloats,
    /// GetUuids.
    GetUuids,
    /// GetStatus.
    GetStatus,
    /// CheckQuality.
    CheckQuality,
    /// GetUsage.
    GetUsage,
    /// ReceiptLogService.GetPublicKey.
    GetPublicKey,
    /// ReceiptLogService.GetSignedTreeHead.
    GetSignedTreeHead,
    /// ReceiptLogService.GetInclusionProof.
    GetInclusionProof,
    /// ReceiptLogService.GetConsistencyProof.
    GetConsistencyProof,
    /// ReceiptLogService.ListReceipts.
    ListReceipts,
}

impl Method {
    /// Every method, in label order.
    pub const ALL: [Self; 13] = [
        Self::GetRandom,
        Self::StreamRandom,
        Self::GetIntegers,
        Self::GetFloats,
        Self::GetUuids,
        Self::GetStatus,
        Self::CheckQuality,
        Self::GetUsage,
        Self::GetPublicKey,
        Self::GetSignedTreeHead,
        Self::GetInclusionProof,
        Self::GetConsistencyProof,
        Self::ListReceipts,
    ];

    /// The RPC name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GetRandom => "GetRandom",
            Self::StreamRandom => "StreamRandom",
            Self::GetIntegers => "GetIntegers",
            Self::GetFloats => "GetFloats",
            Self::GetUuids => "GetUuids",
            Self::GetStatus => "GetStatus",
            Self::CheckQuality => "CheckQuality",
            Self::GetUsage => "GetUsage",
            Self::GetPublicKey => "GetPublicKey",
            Self::GetSignedTreeHead => "GetSignedTreeHead",
            Self::GetInclusionProof => "GetInclusionProof",
            Self::GetConsistencyProof => "GetConsistencyProof",
            Self::ListReceipts => "ListReceipts",
        }
    }
}

/// What the `key` label of per-key series shows (`metrics_key_label`).
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
#[serde(rename_all = "lowercase")]
pub enum KeyLabel {
    /// The key's name from the keys file (who is calling, readable on dashboards).
    #[default]
    Name,
    /// `k-` and 12 hex digits of the SHA-256 of the name: series stay per key, names stay out.
    Digest,
    /// `all`: one series for every key together.
    None,
}

impl KeyLabel {
    /// The label value for the key called `name`.
    pub fn value(self, name: &str) -> String {
        match self {
            Self::Name => name.to_owned(),
            Self::Digest => {
                use sha2::Digest as _;
                let digest = sha2::Sha256::digest(name.as_bytes());
                format!("k-{}", hex::encode(&digest[..6]))
            }
            Self::None => "all".to_owned(),
        }
    }
}

/// Why a call failed authentication or authorization (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthFailure {
    /// No key in the metadata (or not in the `Bearer` form).
    Missing,
    /// A key that matches none.
    Invalid,
    /// A valid key without the scope the method needs.
    Scope,
}

impl AuthFailure {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Invalid => "invalid",
            Self::Scope => "scope",
        }
    }
}

/// Which per-key limit refused a call (the `limit` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum QuotaLimit {
    /// requests_per_second.
    Requests,
    /// bytes_per_second.
    Bytes,
    /// max_streams.
    Streams,
}

impl QuotaLimit {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Requests => "requests",
            Self::Bytes => "bytes",
            Self::Streams => "streams",
        }
    }
}
