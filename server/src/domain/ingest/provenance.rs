//! What the gateway knows of each source, from the provenance of the chunks it accepted.
//!
//! Only chunks that passed the MAC reach this registry, so only keyed collectors can add
//! entries; it is still bounded, dropping the longest-silent source when full.

use std::collections::HashMap;

use tokio::time::Instant;

use super::source::{Mixing, SourceHealth, SourceKind};
use super::verify::SourceReport;

/// Most sources tracked at once.
pub(crate) const MAX_TRACKED_SOURCES: usize = 256;

/// One source as last reported.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRecord {
    /// The reporting collector.
    pub collector_id: String,
    /// The source's name.
    pub name: String,
    /// Its kind.
    pub kind: SourceKind,
    /// Its last reported health.
    pub health: SourceHealth,
    /// Bytes of accepted chunks it contributed to.
    pub contributed_bytes: u64,
    /// When a chunk last reported it.
    pub last_report: Instant,
    /// Mixing of that chunk.
    pub last_mixing: Mixing,
}

/// Sources by (collector id, source name).
#[derive(Debug, Default)]
pub(crate) struct Provenance {
    sources: HashMap<(String, String), SourceRecord>,
}

impl Provenance {
    /// Records the sources of an accepted chunk of `len` bytes.
    pub(crate) fn record(
        &mut self,
        collector_id: &str,
        mixing: Mixing,
        sources: &[SourceReport],
        len: usize,
        now: Instant,
    ) {
        for s in sources {
            let key = (collector_id.to_owned(), s.name.clone());
            if !self.sources.contains_key(&key) && self.sources.len() >= MAX_TRACKED_SOURCES {
                self.evict_oldest();
            }
            let rec = self.sources.entry(key).or_insert_with(|| SourceRecord {
                collector_id: collector_id.to_owned(),
                name: s.name.clone(),
                kind: s.kind,
                health: s.health,
                contributed_bytes: 0,
                last_report: now,
                last_mixing: mixing,
            });
            rec.kind = s.kind;
            rec.health = s.health;
            rec.last_report = now;
            rec.last_mixing = mixing;
            if s.contributed {
                rec.contributed_bytes += len as u64;
            }
        }
    }

    /// Every tracked source, most recently reported first.
    pub(crate) fn snapshot(&self) -> Vec<SourceRecord> {
        let mut all: Vec<_> = self.sources.values().cloned().collect();
        all.sort_by(|a, b| b.last_report.cmp(&a.last_report).then_with(|| a.name.cmp(&b.name)));
        all
    }

    fn evict_oldest(&mut self) {
        if let Some(key) =
            self.sources.iter().min_by_key(|(_, r)| r.last_report).map(|(k, _)| k.clone())
        {
            self.sources.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn report(name: &str, contributed: bool) -> SourceReport {
        SourceReport {
            name: name.into(),
            kind: SourceKind::Quantum,
            health: if contributed { SourceHealth::Healthy } else { SourceHealth::Quarantined },
            contributed,
        }
    }

    #[test]
    fn counts_bytes_only_for_contributing_sources() {
        let mut p = Provenance::default();
        let now = Instant::now();
        let sources = [report("qa", true), report("qb", false)];
        p.record("c", Mixing::None, &sources, 100, now);
        p.record("c", Mixing::None, &sources, 50, now + Duration::from_secs(1));
        let snap = p.snapshot();
        let qa = snap.iter().find(|r| r.name == "qa").expect("qa");
        let qb = snap.iter().find(|r| r.name == "qb").expect("qb");
        assert_eq!((qa.contributed_bytes, qb.contributed_bytes), (150, 0));
        assert_eq!(qb.health, SourceHealth::Quarantined);
    }

    #[test]
    fn stays_bounded() {
        let mut p = Provenance::default();
        let t0 = Instant::now();
        for i in 0..MAX_TRACKED_SOURCES + 10 {
            let at = t0 + Duration::from_millis(i as u64);
            p.record("c", Mixing::None, &[report(&format!("s{i}"), true)], 1, at);
        }
        let snap = p.snapshot();
        assert_eq!(snap.len(), MAX_TRACKED_SOURCES);
        assert!(!snap.iter().any(|r| r.name == "s0"), "the longest-silent source went first");
        assert_eq!(snap[0].name, format!("s{}", MAX_TRACKED_SOURCES + 9));
    }
}
