//! The EntropyService's requests, converted once from their wire types (`TryFrom<pb::...>`)
//! into values whose bounds are already checked: a handler never looks at a `pb` field again.
//! Each refusal is INVALID_ARGUMENT naming the field and its bound ([`out_of_range`]).

use entropy_proto::v1::{
    Encoding, GetFloatsRequest, GetIntegersRequest, GetRandomRequest, GetUuidsRequest,
};
use tonic::Status;

use super::errors::out_of_range;
use crate::config::MAX_GET_RANDOM_BYTES;
use crate::sampling::IntRange;

/// Largest `count` of GetIntegers, GetFloats and GetUuids.
pub const MAX_COUNT: u32 = 10_000;

/// `GetRandom`: how many bytes, and how to encode them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomBytes {
    /// 1..=[`MAX_GET_RANDOM_BYTES`].
    pub n: usize,
    /// Raw `data`, or `text` in hex or base64.
    pub encoding: Encoding,
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
        Ok(Self { n, encoding })
    }
}

/// `GetIntegers`: how many, from which inclusive range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Integers {
    /// 1..=[`MAX_COUNT`].
    pub count: usize,
    /// `min..=max`, non-empty.
    pub range: IntRange,
}

impl TryFrom<GetIntegersRequest> for Integers {
    type Error = Status;

    fn try_from(req: GetIntegersRequest) -> Result<Self, Status> {
        let count = count("count", req.count)?;
        let range = IntRange::new(req.min, req.max).ok_or_else(|| {
            Status::invalid_argument(format!(
                "min ({}) must be less than or equal to max ({})",
                req.min, req.max
            ))
        })?;
        Ok(Self { count, range })
    }
}

/// `GetFloats` and `GetUuids`: how many values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count(pub usize);

impl TryFrom<GetFloatsRequest> for Count {
    type Error = Status;

    fn try_from(req: GetFloatsRequest) -> Result<Self, Status> {
        count("count", req.count).map(Self)
    }
}

impl TryFrom<GetUuidsRequest> for Count {
    type Error = Status;

    fn try_from(req: GetUuidsRequest) -> Result<Self, Status> {
        count("count", req.count).map(Self)
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
        let random =
            |num_bytes, encoding| RandomBytes::try_from(GetRandomRequest { num_bytes, encoding });
        assert_eq!(random(32, 1).ok().map(|r| (r.n, r.encoding)), Some((32, Encoding::Hex)));
        let too_big = random(MAX_GET_RANDOM_BYTES as u32 + 1, 0).unwrap_err();
        assert_eq!(too_big.code(), Code::InvalidArgument);
        assert!(too_big.message().starts_with("num_bytes is 1048577, must be 1..="));
        assert!(random(0, 0).unwrap_err().message().starts_with("num_bytes is 0"));
        assert!(random(8, 7).unwrap_err().message().starts_with("encoding is 7"));

        let ints = |min, max, count| Integers::try_from(GetIntegersRequest { min, max, count });
        assert_eq!(ints(i64::MIN, i64::MAX, 3).ok().map(|i| i.count), Some(3));
        assert!(ints(2, 1, 3).unwrap_err().message().contains("min (2)"));
        assert!(ints(1, 2, MAX_COUNT + 1).unwrap_err().message().starts_with("count is 10001"));
        assert!(Count::try_from(GetUuidsRequest { count: 0 }).is_err());
        assert_eq!(
            Count::try_from(GetFloatsRequest { count: MAX_COUNT }).ok(),
            Some(Count(10_000))
        );
    }
}
