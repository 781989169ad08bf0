//! The one signed-chunk fixture: a `PublishRequest` a gateway accepts as it is (one healthy OS
//! source, no mixing), to be edited before it is sealed. Unit tests, the fuzz harness and the
//! micro-benchmarks build their chunks from it, so a new field of the wire format is added here
//! once.

use entropy_proto::signing::seal;
use entropy_proto::v1::{Mixing, PublishRequest, SourceHealth, SourceKind, SourceReport};

/// Who signs a fixture chunk, and for which gateway.
#[derive(Debug, Clone, Copy)]
pub struct Signer<'a> {
    /// The collector's name.
    pub collector_id: &'a str,
    /// The gateway the chunk is meant for.
    pub gateway_id: &'a str,
    /// The MAC key's id.
    pub key_id: &'a str,
    /// The MAC key.
    pub key: &'a [u8],
}

impl Signer<'_> {
    /// A chunk of `data` signed at `timestamp_unix_ms` (epoch 1, sequence 1); `edit` runs
    /// before the CRC and the MAC are computed, so the result is valid whatever it changed.
    pub fn signed(
        &self,
        timestamp_unix_ms: i64,
        data: Vec<u8>,
        edit: impl FnOnce(&mut PublishRequest),
    ) -> PublishRequest {
        let mut req = PublishRequest {
            collector_id: self.collector_id.into(),
            gateway_id: self.gateway_id.into(),
            epoch: 1,
            sequence: 1,
            timestamp_unix_ms,
            mixing: Mixing::None as i32,
            sources: vec![healthy_os_source()],
            data,
            crc32c: 0,
            key_id: self.key_id.into(),
            mac: Vec::new(),
        };
        edit(&mut req);
        seal(self.key, &mut req);
        req
    }
}

/// The provenance of one healthy OS source that contributed.
pub fn healthy_os_source() -> SourceReport {
    SourceReport {
        name: "os".into(),
        kind: SourceKind::Os as i32,
        health: SourceHealth::Healthy as i32,
        contributed: true,
    }
}
