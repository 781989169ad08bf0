//! The EntropyService's requests, converted once from their wire types (`TryFrom<pb::...>`)
//! into values whose bounds are already checked: a handler never looks at a `pb` field again.
//! Each refusal is INVALID_ARGUMENT naming the field and its bound ([`out_of_range`]).

use entropy_proto::v1 as pb;
use entropy_proto::v1::{
    CheckQualityRequest, Encoding, GetFloatsRequest, GetIntegersRequest, GetRandomRequest,
    GetUuidsRequest,
};
use entropy_quality::MIN_SAMPLE_BYTES;
use tonic::Status;

use super::errors::{self, out_of_range};
use crate::domain::drbg::Construction;
use crate::domain::ingest::{kind_of, source};
use crate::domain::pool::Kinds;
use crate::domain::sampling::IntRange;
use crate::process::config::MAX_GET_RANDOM_BYTES;

/// Largest `count` of GetIntegers, GetFloats and GetUuids.
pub(crate) const MAX_COUNT: u32 = 10_000;

/// Largest `sample_bytes` of CheckQuality: 4 MiB, analyzed in about 16 ms (3.9 ms per MiB).
pub(crate) const MAX_SAMPLE_BYTES: usize = 4 << 20;

/// The source kinds a call accepts (`accept_kinds`): any when the list is empty. Each entry
/// must be a known kind other than UNSPECIFIED; repeats are allowed.
pub(crate) fn accept_kinds(values: &[i32]) -> Result<Kinds, Status> {
    let mut accept = Kinds::default();
    for (i, &value) in values.iter().enumerate() {
        match source::SourceKind::try_from(value) {
            Ok(kind) => accept = accept.with(kind_of(kind)),
            Err(_) => {
                return Err(out_of_range(
                    &format!("accept_kinds[{i}]"),
                    value,
                    "1 (SOURCE_KIND_QUANTUM), 2 (SOURCE_KIND_HARDWARE) or 3 (SOURCE_KIND_OS)",
                ));
            }
        }
    }
    Ok(if accept.is_empty() { Kinds::ANY } else { accept })
}

/// The construction a call asks for (`construction`): RAW when unset.
pub(crate) fn construction(value: i32) -> Result<Construction, Status> {
    match pb::Construction::try_from(value) {
        Ok(pb::Construction::Unspecified | pb::Construction::Raw) => Ok(Construction::Raw),
        Ok(pb::Construction::Drbg) => Ok(Construction::Drbg { prediction_resistance: false }),
        Ok(pb::Construction::DrbgPredictionResistant) => {
            Ok(Construction::Drbg { prediction_resistance: true })
        }
        Err(_) => Err(out_of_range(
            "construction",
            value,
            "0, 1 (CONSTRUCTION_RAW), 2 (CONSTRUCTION_DRBG) or 3 \
             (CONSTRUCTION_DRBG_PREDICTION_RESISTANT)",
        )),
    }
}

/// `GetRandom`: how many bytes, how to encode them, of which source kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RandomBytes {
    /// 1..=[`MAX_GET_RANDOM_BYTES`].
    pub n: usize,
    /// Raw `data`, or `text` in hex or base64.
    pub encoding: Encoding,
    /// The kinds accepted.
    pub accept: Kinds,
    /// Pool bytes or DRBG output.
    pub construction: Construction,
}

impl TryFrom<GetRandomRequest> for RandomBytes {
    type Error = Status;

    fn try_from(req: GetRandomRequest) -> Result<Self, Status> {
        let n = req.num_bytes as usize;
        if n == 0 || n > MAX_GET_RANDOM_BYTES {
            return Err(out_of_range("num_bytes", n, &format!("1..={MAX_GET_RANDOM_BYTES}")));
        }
        let encoding = Encoding::try_from(req.encoding)
            .map_err(|_| out_of_range("encoding", req.encoding, "0, 1 (HEX) or 2 (BASE64)"))?;
        Ok(Self {
            n,
            encoding,
            accept: accept_kinds(&req.accept_kinds)?,
            construction: construction(req.construction)?,
        })
    }
}

/// `GetIntegers`: how many, from which inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Integers {
    /// 1..=[`MAX_COUNT`].
    pub count: usize,
    /// `min..=max`, non-empty.
    pub range: IntRange,
    /// The kinds accepted.
    pub accept: Kinds,
    /// Pool bytes or DRBG output.
    pub construction: Construction,
}

impl TryFrom<GetIntegersRequest> for Integers {
    type Error = Status;

    fn try_from(req: GetIntegersRequest) -> Result<Self, Status> {
        let count = count("count", req.count)?;
        let range = IntRange::new(req.min, req.max).ok_or_else(|| {
            errors::invalid_request(format!(
                "min ({}) must be less than or equal to max ({})",
                req.min, req.max
            ))
        })?;
        Ok(Self {
            count,
            range,
            accept: accept_kinds(&req.accept_kinds)?,
            construction: construction(req.construction)?,
        })
    }
}

/// `GetFloats` and `GetUuids`: how many values, of which source kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Count {
    /// 1..=[`MAX_COUNT`].
    pub count: usize,
    /// The kinds accepted.
    pub accept: Kinds,
    /// Pool bytes or DRBG output.
    pub construction: Construction,
}

impl TryFrom<GetFloatsRequest> for Count {
    type Error = Status;

    fn try_from(req: GetFloatsRequest) -> Result<Self, Status> {
        Ok(Self {
            count: count("count", req.count)?,
            accept: accept_kinds(&req.accept_kinds)?,
            construction: construction(req.construction)?,
        })
    }
}

impl TryFrom<GetUuidsRequest> for Count {
    type Error = Status;

    fn try_from(req: GetUuidsRequest) -> Result<Self, Status> {
        Ok(Self {
            count: count("count", req.count)?,
            accept: accept_kinds(&req.accept_kinds)?,
            construction: construction(req.construction)?,
        })
    }
}

/// `CheckQuality`: how many bytes to test, of which source kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QualitySample {
    /// [`MIN_SAMPLE_BYTES`]..=[`MAX_SAMPLE_BYTES`].
    pub n: usize,
    /// The kinds accepted.
    pub accept: Kinds,
    /// Test pool bytes or DRBG output.
    pub construction: Construction,
}

impl TryFrom<CheckQualityRequest> for QualitySample {
    type Error = Status;

    fn try_from(req: CheckQualityRequest) -> Result<Self, Status> {
        let n = req.sample_bytes as usize;
        if !(MIN_SAMPLE_BYTES..=MAX_SAMPLE_BYTES).contains(&n) {
            return Err(out_of_range(
                "sample_bytes",
                n,
                &format!("{MIN_SAMPLE_BYTES}..={MAX_SAMPLE_BYTES}"),
            ));
        }
        Ok(Self {
            n,
            accept: accept_kinds(&req.accept_kinds)?,
            construction: construction(req.construction)?,
        })
    }
}

fn count(field: &str, count: u32) -> Result<usize, Status> {
    if count == 0 || count > MAX_COUNT {
        return Err(out_of_range(field, count, &format!("1..={MAX_COUNT}")));
    }
    Ok(count as usize)
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    #[test]
    fn bounds_are_checked_once_with_the_field_named() {
        let random = |num_bytes, encoding| {
            RandomBytes::try_from(GetRandomRequest { num_bytes, encoding, ..Default::default() })
        };
        assert_eq!(random(32, 1).ok().map(|r| (r.n, r.encoding)), Some((32, Encoding::Hex)));
        let too_big = random(MAX_GET_RANDOM_BYTES as u32 + 1, 0).unwrap_err();
        assert_eq!(too_big.code(), Code::InvalidArgument);
        assert!(too_big.message().starts_with("num_bytes is 1048577, must be 1..="));
        assert!(random(0, 0).unwrap_err().message().starts_with("num_bytes is 0"));
        assert!(random(8, 7).unwrap_err().message().starts_with("encoding is 7"));

        let ints = |min, max, count| {
            Integers::try_from(GetIntegersRequest { min, max, count, ..Default::default() })
        };
        assert_eq!(ints(i64::MIN, i64::MAX, 3).ok().map(|i| i.count), Some(3));
        assert!(ints(2, 1, 3).unwrap_err().message().contains("min (2)"));
        assert!(ints(1, 2, MAX_COUNT + 1).unwrap_err().message().starts_with("count is 10001"));
        assert!(Count::try_from(GetUuidsRequest { count: 0, ..Default::default() }).is_err());
        assert_eq!(
            Count::try_from(GetFloatsRequest { count: MAX_COUNT, ..Default::default() }).ok(),
            Some(Count { count: 10_000, accept: Kinds::ANY, construction: Construction::Raw })
        );
    }

    #[test]
    fn accept_kinds_name_the_bad_entry_and_empty_means_any() {
        assert_eq!(accept_kinds(&[]).ok(), Some(Kinds::ANY));
        assert_eq!(accept_kinds(&[1]).ok(), Some(Kinds::QUANTUM));
        assert_eq!(accept_kinds(&[1, 3, 1]).ok(), Some(Kinds::QUANTUM.with(Kinds::OS)));
        for (values, field) in
            [(&[0][..], "accept_kinds[0] is 0"), (&[1, 9], "accept_kinds[1] is 9")]
        {
            let e = accept_kinds(values).unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(e.message().starts_with(field), "{}", e.message());
            assert!(e.message().contains("SOURCE_KIND_QUANTUM"), "{}", e.message());
        }
        let e = GetFloatsRequest { count: 5, accept_kinds: vec![-1], ..Default::default() };
        assert!(Count::try_from(e).unwrap_err().message().starts_with("accept_kinds[0] is -1"));
    }

    #[test]
    fn construction_is_raw_unless_a_drbg_is_asked_for_and_unknown_values_are_named() {
        assert_eq!(construction(0).ok(), Some(Construction::Raw));
        assert_eq!(construction(1).ok(), Some(Construction::Raw));
        assert_eq!(construction(2).ok(), Some(Construction::Drbg { prediction_resistance: false }));
        assert_eq!(construction(3).ok(), Some(Construction::Drbg { prediction_resistance: true }));
        for bad in [4, -1] {
            let e = construction(bad).unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(e.message().starts_with(&format!("construction is {bad}")), "{}", e.message());
            assert!(e.message().contains("CONSTRUCTION_DRBG"), "{}", e.message());
        }
        let drbg = GetRandomRequest { num_bytes: 8, construction: 2, ..Default::default() };
        assert_eq!(
            RandomBytes::try_from(drbg).ok().map(|r| r.construction),
            Some(Construction::Drbg { prediction_resistance: false })
        );
    }

    #[test]
    fn quality_samples_are_bounded_by_the_tests_minimum_and_4_mib() {
        let sample = |sample_bytes| {
            QualitySample::try_from(CheckQualityRequest {
                sample_bytes,
                accept_kinds: vec![3],
                ..Default::default()
            })
        };
        assert_eq!(sample(2500).ok().map(|s| (s.n, s.accept)), Some((2500, Kinds::OS)));
        assert!(sample(4 << 20).is_ok());
        for (n, bound) in [(2499, "2500..=4194304"), (0, "2500..=4194304"), (4194305, "2500..=")] {
            let e = sample(n).unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument);
            assert!(e.message().starts_with(&format!("sample_bytes is {n}, must be {bound}")));
        }
    }
}
