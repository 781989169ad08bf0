//! The collector's own words for a chunk's provenance (what kind each source is, its health,
//! how the sources were mixed), so that sources, health tests, mixing and metrics never see
//! the wire's enums and their `UNSPECIFIED` zero, a value the collector never means.
//!
//! They become `entropy_proto::v1` values in one place, here, when the signer prepares a
//! chunk ([`crate::signer::ChunkSigner::prepare`]); the config's words (`type`, `kind`,
//! `mixing`) become these when the config is read ([`crate::config::SourceConfig::kind`],
//! [`crate::mixing::Scheme`]).

use entropy_proto::v1 as pb;

/// What kind of physical process a source draws on. Only [`SourceKind::Quantum`] is quantum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A quantum random number generator (a Quantis appliance, card or USB device).
    Quantum,
    /// A non-quantum hardware noise source (`/dev/hwrng`: a TPM, a virtio RNG).
    Hardware,
    /// The operating system's CSPRNG.
    Os,
}

/// A source's health as the pipeline sees it after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceHealth {
    /// Passed its start-up test and every continuous test since.
    Healthy,
    /// Running its start-up test; its output is not mixed in yet.
    Starting,
    /// Failed a health test or a sanity check; its output is discarded until it recovers.
    Quarantined,
    /// Not answering; nothing is read from it until its pause is over.
    Unreachable,
}

/// How a round's healthy sources were combined into the chunk's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mixing {
    /// One source, passed through as read.
    None,
    /// Bytewise XOR.
    Xor,
    /// HKDF-SHA256, block by block.
    HkdfSha256,
}

impl Mixing {
    /// Every mixing, in the order of [`Mixing::index`].
    pub const ALL: [Mixing; 3] = [Mixing::None, Mixing::Xor, Mixing::HkdfSha256];

    /// Its position in [`Mixing::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The `mixing` label of the metrics.
    pub fn label(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Xor => "xor",
            Self::HkdfSha256 => "hkdf",
        }
    }
}

/// One source as reported with a chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceReport {
    /// Its operator-given name.
    pub name: String,
    /// What kind of source it is.
    pub kind: SourceKind,
    /// Its health when the chunk was mixed.
    pub health: SourceHealth,
    /// Its output went into the chunk's bytes.
    pub contributed: bool,
}

impl From<SourceKind> for pb::SourceKind {
    fn from(kind: SourceKind) -> Self {
        match kind {
            SourceKind::Quantum => Self::Quantum,
            SourceKind::Hardware => Self::Hardware,
            SourceKind::Os => Self::Os,
        }
    }
}

impl From<entropy_health::State> for SourceHealth {
    fn from(state: entropy_health::State) -> Self {
        match state {
            entropy_health::State::Healthy => Self::Healthy,
            entropy_health::State::Starting => Self::Starting,
            entropy_health::State::Quarantined => Self::Quarantined,
        }
    }
}

impl From<SourceHealth> for pb::SourceHealth {
    fn from(health: SourceHealth) -> Self {
        match health {
            SourceHealth::Healthy => Self::Healthy,
            SourceHealth::Starting => Self::Starting,
            SourceHealth::Quarantined => Self::Quarantined,
            SourceHealth::Unreachable => Self::Unreachable,
        }
    }
}

impl From<Mixing> for pb::Mixing {
    fn from(mixing: Mixing) -> Self {
        match mixing {
            Mixing::None => Self::None,
            Mixing::Xor => Self::Xor,
            Mixing::HkdfSha256 => Self::HkdfSha256,
        }
    }
}

impl From<SourceReport> for pb::SourceReport {
    fn from(report: SourceReport) -> Self {
        Self {
            name: report.name,
            kind: pb::SourceKind::from(report.kind) as i32,
            health: pb::SourceHealth::from(report.health) as i32,
            contributed: report.contributed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_has_its_own_wire_value_and_none_is_unspecified() {
        let kinds = [SourceKind::Quantum, SourceKind::Hardware, SourceKind::Os]
            .map(|k| pb::SourceKind::from(k) as i32);
        assert_eq!(kinds, [1, 2, 3]);
        let health = [
            SourceHealth::Healthy,
            SourceHealth::Starting,
            SourceHealth::Quarantined,
            SourceHealth::Unreachable,
        ]
        .map(|h| pb::SourceHealth::from(h) as i32);
        assert_eq!(health, [1, 2, 3, 4]);
        assert_eq!(Mixing::ALL.map(|m| pb::Mixing::from(m) as i32), [1, 2, 3]);
        assert_eq!(Mixing::ALL.map(Mixing::index), [0, 1, 2]);
        assert_eq!(Mixing::ALL.map(Mixing::label), ["none", "xor", "hkdf"]);
    }
}
