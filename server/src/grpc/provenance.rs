//! The pool's provenance of a draw, as the wire's `DrawProvenance`.

use entropy_proto::v1 as pb;
use entropy_proto::v1::{ChunkRef, ClassLevel, DrawProvenance, SourceKind};

use crate::domain::drbg::{Label, SECURITY_STRENGTH_BITS};
use crate::domain::ingest::source;
use tokio::time::Instant;

use crate::domain::pool::{ChunkOrigin, ClassLevels, Kinds, Provenance, Segment};

/// The wire form of a draw made of `segments` (in byte order), as of `now`; `None` for no
/// bytes (a draw of zero bytes has no origin).
pub(crate) fn of_segments(segments: &[Segment], now: Instant) -> Option<DrawProvenance> {
    Provenance::of(segments, now).map(|p| to_pb(&p))
}

/// The wire form of `p`.
pub(crate) fn to_pb(p: &Provenance) -> DrawProvenance {
    DrawProvenance {
        kinds: kinds_to_pb(p.kinds),
        mixed: p.mixed,
        collector_ids: p.collectors.iter().map(|c| c.to_string()).collect(),
        first_chunk: Some(chunk_ref(&p.first)),
        last_chunk: Some(chunk_ref(&p.last)),
        chunk_count: u32::try_from(p.chunks).unwrap_or(u32::MAX),
        oldest_byte_age_ms: u64::try_from(p.oldest_age.as_millis()).unwrap_or(u64::MAX),
        construction: pb::Construction::Raw as i32,
        drbg: None,
    }
}

/// The wire form of DRBG output's provenance: its instance's `label`, and where the instance's
/// seeds came from.
pub(crate) fn of_drbg(label: &Label, seeds: &Provenance) -> DrawProvenance {
    let construction = if label.prediction_resistance {
        pb::Construction::DrbgPredictionResistant
    } else {
        pb::Construction::Drbg
    };
    DrawProvenance {
        construction: construction as i32,
        drbg: Some(pb::DrbgLabel {
            mechanism: pb::DrbgMechanism::CtrDrbgAes256 as i32,
            security_strength_bits: SECURITY_STRENGTH_BITS,
            instance_id: label.instance_id.clone(),
            reseed_count: label.reseeds,
            bytes_since_reseed: label.bytes_since_reseed,
            seed_bytes: label.seed_bytes,
            prediction_resistance: label.prediction_resistance,
        }),
        ..to_pb(seeds)
    }
}

/// The pool's levels by class, largest first, for GetStatus.
pub(crate) fn class_levels(levels: &ClassLevels) -> Vec<ClassLevel> {
    levels
        .held()
        .into_iter()
        .map(|(kinds, bytes)| ClassLevel { kinds: kinds_to_pb(kinds), bytes: bytes as u64 })
        .collect()
}

/// A set of kinds as enum values, in enum order.
pub(crate) fn kinds_to_pb(kinds: Kinds) -> Vec<i32> {
    kinds
        .iter()
        .map(|k| match k {
            Kinds::QUANTUM => SourceKind::Quantum,
            Kinds::HARDWARE => SourceKind::Hardware,
            _ => SourceKind::Os,
        } as i32)
        .collect()
}

fn chunk_ref(origin: &ChunkOrigin) -> ChunkRef {
    ChunkRef {
        collector_id: origin.collector.to_string(),
        epoch: origin.epoch,
        sequence: origin.sequence,
        signed_at_unix_ms: origin.signed_at_unix_ms,
    }
}

/// A source kind as the wire spells it.
pub(crate) fn wire_kind(kind: source::SourceKind) -> pb::SourceKind {
    match kind {
        source::SourceKind::Quantum => pb::SourceKind::Quantum,
        source::SourceKind::Hardware => pb::SourceKind::Hardware,
        source::SourceKind::Os => pb::SourceKind::Os,
    }
}

/// A source's health as the wire spells it.
pub(crate) fn wire_health(health: source::SourceHealth) -> pb::SourceHealth {
    match health {
        source::SourceHealth::Healthy => pb::SourceHealth::Healthy,
        source::SourceHealth::Starting => pb::SourceHealth::Starting,
        source::SourceHealth::Quarantined => pb::SourceHealth::Quarantined,
    }
}

/// A mixing as the wire spells it.
pub(crate) fn wire_mixing(mixing: source::Mixing) -> pb::Mixing {
    match mixing {
        source::Mixing::None => pb::Mixing::None,
        source::Mixing::Xor => pb::Mixing::Xor,
        source::Mixing::HkdfSha256 => pb::Mixing::HkdfSha256,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::time::Duration;

    use super::*;

    #[test]
    fn a_draw_across_two_chunks_names_both_ends_and_every_kind_once() {
        let t0 = Instant::now();
        let origin = |sequence, kinds| {
            Arc::new(ChunkOrigin {
                collector: "c1".into(),
                epoch: 9,
                sequence,
                signed_at_unix_ms: 1_000 + sequence as i64,
                kinds,
                mixed: kinds != Kinds::QUANTUM,
            })
        };
        let qo = Kinds::QUANTUM.with(Kinds::OS);
        let segments = [
            Segment { len: 10, origin: origin(4, qo), stored_at: t0 },
            Segment { len: 5, origin: origin(5, qo), stored_at: t0 + Duration::from_millis(3) },
        ];
        let p = of_segments(&segments, t0 + Duration::from_millis(250)).expect("bytes");
        assert_eq!(p.kinds, [SourceKind::Quantum as i32, SourceKind::Os as i32]);
        assert!(p.mixed);
        assert_eq!(p.collector_ids, ["c1"]);
        let (first, last) = (p.first_chunk.expect("first"), p.last_chunk.expect("last"));
        assert_eq!((first.sequence, last.sequence, first.epoch), (4, 5, 9));
        assert_eq!(last.signed_at_unix_ms, 1_005);
        assert_eq!((p.chunk_count, p.oldest_byte_age_ms), (2, 250));
        assert_eq!(of_segments(&[], t0), None);
    }

    #[test]
    fn class_levels_list_the_largest_first() {
        let mut levels = [0; Kinds::CLASSES];
        levels[0] = 10; // QUANTUM
        levels[3] = 0; // OS: empty, not listed
        levels[4] = 30; // QUANTUM+OS
        let listed = class_levels(&ClassLevels(levels));
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].kinds, [SourceKind::Quantum as i32, SourceKind::Os as i32]);
        assert_eq!((listed[0].bytes, listed[1].bytes), (30, 10));
    }
}
