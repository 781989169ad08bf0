//! The gateway's words for a chunk's provenance: what kind each source is, its health when the
//! chunk was mixed, and how the sources were mixed. [`super::verify`] parses the wire's numbers
//! into these once (an unknown number or the wire's `UNSPECIFIED` zero is refused there), so
//! nothing after verification meets a value the collector never means; the gRPC layer spells
//! them back in the wire's enums for GetStatus ([`crate::grpc::provenance`]).

/// What kind of physical process a source draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A quantum random number generator.
    Quantum,
    /// A non-quantum hardware noise source.
    Hardware,
    /// An operating system's CSPRNG.
    Os,
}

/// A source's health as its collector reported it with a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceHealth {
    /// Passing its health tests.
    Healthy,
    /// Running its start-up test.
    Starting,
    /// Failed a test; its output is discarded.
    Quarantined,
}

/// How a chunk's contributing sources were combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mixing {
    /// One source, as read.
    None,
    /// Bytewise XOR of two or more.
    Xor,
    /// HKDF-SHA256 over one or more.
    HkdfSha256,
}

impl Mixing {
    /// Its name in provenance.proto, for messages to collectors.
    pub(crate) fn wire_name(self) -> &'static str {
        match self {
            Self::None => "MIXING_NONE",
            Self::Xor => "MIXING_XOR",
            Self::HkdfSha256 => "MIXING_HKDF_SHA256",
        }
    }
}

/// A wire number that names none of a type's values (or names `UNSPECIFIED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unknown(pub i32);

impl TryFrom<i32> for SourceKind {
    type Error = Unknown;

    /// `SOURCE_KIND_*` of provenance.proto.
    fn try_from(value: i32) -> Result<Self, Unknown> {
        match value {
            1 => Ok(Self::Quantum),
            2 => Ok(Self::Hardware),
            3 => Ok(Self::Os),
            other => Err(Unknown(other)),
        }
    }
}

impl TryFrom<i32> for SourceHealth {
    type Error = Unknown;

    /// `SOURCE_HEALTH_*` of provenance.proto.
    fn try_from(value: i32) -> Result<Self, Unknown> {
        match value {
            1 => Ok(Self::Healthy),
            2 => Ok(Self::Starting),
            3 => Ok(Self::Quarantined),
            other => Err(Unknown(other)),
        }
    }
}

impl TryFrom<i32> for Mixing {
    type Error = Unknown;

    /// `MIXING_*` of provenance.proto.
    fn try_from(value: i32) -> Result<Self, Unknown> {
        match value {
            1 => Ok(Self::None),
            2 => Ok(Self::Xor),
            3 => Ok(Self::HkdfSha256),
            other => Err(Unknown(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use entropy_proto::v1 as pb;

    use super::*;

    /// The numbers parsed here are the wire's: every specified value of each wire enum parses,
    /// UNSPECIFIED and numbers past the last do not.
    #[test]
    fn the_wire_numbers_parse_to_the_same_names() {
        let kinds = [
            (pb::SourceKind::Quantum, SourceKind::Quantum),
            (pb::SourceKind::Hardware, SourceKind::Hardware),
            (pb::SourceKind::Os, SourceKind::Os),
        ];
        for (wire, ours) in kinds {
            assert_eq!(SourceKind::try_from(wire as i32), Ok(ours));
        }
        let healths = [
            (pb::SourceHealth::Healthy, SourceHealth::Healthy),
            (pb::SourceHealth::Starting, SourceHealth::Starting),
            (pb::SourceHealth::Quarantined, SourceHealth::Quarantined),
        ];
        for (wire, ours) in healths {
            assert_eq!(SourceHealth::try_from(wire as i32), Ok(ours));
        }
        let mixings = [
            (pb::Mixing::None, Mixing::None),
            (pb::Mixing::Xor, Mixing::Xor),
            (pb::Mixing::HkdfSha256, Mixing::HkdfSha256),
        ];
        for (wire, ours) in mixings {
            assert_eq!(Mixing::try_from(wire as i32), Ok(ours));
            assert_eq!(ours.wire_name(), wire.as_str_name());
        }
        for bad in [0, 4, -1] {
            assert_eq!(SourceKind::try_from(bad), Err(Unknown(bad)));
            assert_eq!(SourceHealth::try_from(bad), Err(Unknown(bad)));
            assert_eq!(Mixing::try_from(bad), Err(Unknown(bad)));
        }
    }
}
