//! The REST routes' query strings, read into the call each route makes, with the gRPC bounds.
//!
//! Every refusal names the query parameter and its bound ([`BadRequest`]). A parameter that
//! looks like a credential (`api_key`, `key`, `token`, ...) is refused before anything else is
//! read: keys travel in headers only, since URLs end up in access logs, proxy logs and browser
//! history. Unknown and repeated parameters are refused too, so a typo never silently falls
//! back to a default.

use entropy_quality::MIN_SAMPLE_BYTES;

use crate::grpc::requests::{MAX_COUNT, MAX_SAMPLE_BYTES};
use crate::process::config::MAX_GET_RANDOM_BYTES;

/// Query parameter names (lowercased, `-` and `_` dropped) refused as credentials in the URL.
const KEY_NAMES: [&str; 8] =
    ["apikey", "key", "token", "accesstoken", "auth", "authorization", "xapikey", "bearer"];
/// Sample bytes per Monte Carlo point: CheckQuality's estimate takes 24-bit coordinate pairs.
pub(crate) const BYTES_PER_POINT: u32 = 6;
/// Fewest Monte Carlo iterations: as many points as CheckQuality's smallest sample holds.
pub(crate) const MIN_ITERATIONS: u32 = (MIN_SAMPLE_BYTES as u32).div_ceil(BYTES_PER_POINT);
/// Most Monte Carlo iterations: as many points as CheckQuality's largest sample holds.
pub(crate) const MAX_ITERATIONS: u32 = MAX_SAMPLE_BYTES as u32 / BYTES_PER_POINT;
/// Monte Carlo iterations when none are asked for (the original's clients ask for 500000).
pub(crate) const DEFAULT_ITERATIONS: u32 = 500_000;
/// The longest parameter value echoed back in a message, in characters.
const ECHO_CHARS: usize = 32;

/// What a REST request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `GET /api/random`: `bytes` random bytes, in `encoding`.
    Random { bytes: u32, encoding: Encoding },
    /// `GET /api/integers`: `count` integers uniform over `[min, max]`.
    Integers { count: u32, min: i64, max: i64 },
    /// `GET /api/floats`: `count` floats uniform over `[0, 1)`.
    Floats { count: u32 },
    /// `GET /api/uuid`: `count` version-4 UUIDs.
    Uuids { count: u32 },
    /// `GET /api/status`.
    Status,
    /// `GET /api/test/monte-carlo`: CheckQuality on `iterations` points' worth of bytes.
    MonteCarlo { iterations: u32 },
    /// `GET /health`: readiness, without a key.
    Health,
}

/// How `/api/random` returns its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// Lowercase hex text (the default).
    Hex,
    /// Standard base64 with padding.
    Base64,
    /// The raw bytes.
    Binary,
}

/// A request refused before any call: the HTTP status, the message, and the parameter named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRequest {
    pub status: http::StatusCode,
    pub message: String,
    pub field: Option<String>,
}

impl BadRequest {
    fn field(field: &str, message: String) -> Self {
        Self { status: http::StatusCode::BAD_REQUEST, message, field: Some(field.to_owned()) }
    }
}

/// The routes served, and the parameters each accepts.
const ROUTES: [(&str, &[&str]); 7] = [
    ("/api/random", &["bytes", "encoding"]),
    ("/api/integers", &["count", "min", "max"]),
    ("/api/floats", &["count"]),
    ("/api/uuid", &["count"]),
    ("/api/status", &[]),
    ("/api/test/monte-carlo", &["iterations"]),
    ("/health", &[]),
];

/// Reads `path` and `query` (the raw query string, if any) into what they ask for.
pub(crate) fn read(path: &str, query: Option<&str>) -> Result<Ask, BadRequest> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .map(|(n, v)| (n.into_owned(), v.into_owned()))
        .collect();
    // A key in the URL is refused first, whatever else is wrong, and whatever the route.
    if let Some((name, _)) = pairs.iter().find(|(n, _)| is_key_name(n)) {
        return Err(BadRequest {
            status: http::StatusCode::BAD_REQUEST,
            message: format!(
                "query parameter {:?} looks like an API key: keys are accepted only in a header \
                 (\"Authorization: Bearer <key>\" or \"X-API-Key: <key>\"), never in the URL, \
                 because URLs end up in access logs, proxy logs and browser history. Nothing was \
                 drawn; consider this key exposed and have it replaced",
                echo(name)
            ),
            field: Some(echo(name)),
        });
    }
    let Some((route, accepted)) = ROUTES.iter().find(|(r, _)| *r == path) else {
        return Err(BadRequest {
            status: http::StatusCode::NOT_FOUND,
            message: format!(
                "no route {:?}; served: {}",
                echo(path),
                ROUTES.iter().map(|(r, _)| *r).collect::<Vec<_>>().join(", ")
            ),
            field: None,
        });
    };
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in &pairs {
        if !accepted.contains(&name.as_str()) {
            let accepted = if accepted.is_empty() { "none".into() } else { accepted.join(", ") };
            return Err(BadRequest::field(
                name,
                format!(
                    "unknown query parameter {:?} for {route} (accepted: {accepted})",
                    echo(name)
                ),
            ));
        }
        if seen.contains(&name.as_str()) {
            return Err(BadRequest::field(name, format!("{name} is given twice; give it once")));
        }
        seen.push(name);
    }
    let get = |name: &str| pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let count_bound = format!("1..={MAX_COUNT}");
    Ok(match *route {
        "/api/random" => {
            let bound = format!("1..={MAX_GET_RANDOM_BYTES}");
            let bytes = required("bytes", get("bytes"), &bound)?;
            let bytes = unsigned("bytes", bytes, 1, MAX_GET_RANDOM_BYTES as u64, &bound)?;
            let encoding = match get("encoding") {
                None => Encoding::Hex,
                Some(e) => encoding(e)?,
            };
            Ask::Random { bytes, encoding }
        }
        "/api/integers" => {
            let count = required("count", get("count"), &count_bound)?;
            let count = unsigned("count", count, 1, u64::from(MAX_COUNT), &count_bound)?;
            let min = get("min").map_or(Ok(0), |v| signed("min", v))?;
            let max = get("max").map_or(Ok(100), |v| signed("max", v))?;
            if min > max {
                return Err(BadRequest::field(
                    "min",
                    format!("min ({min}) must be <= max ({max}); both may be any 64-bit integer"),
                ));
            }
            Ask::Integers { count, min, max }
        }
        "/api/floats" => {
            let count = required("count", get("count"), &count_bound)?;
            Ask::Floats { count: unsigned("count", count, 1, u64::from(MAX_COUNT), &count_bound)? }
        }
        "/api/uuid" => {
            let count = get("count").unwrap_or("1");
            Ask::Uuids { count: unsigned("count", count, 1, u64::from(MAX_COUNT), &count_bound)? }
        }
        "/api/status" => Ask::Status,
        "/api/test/monte-carlo" => {
            let bound = format!("{MIN_ITERATIONS}..={MAX_ITERATIONS}");
            let iterations = match get("iterations") {
                None => DEFAULT_ITERATIONS,
                Some(text) => unsigned(
                    "iterations",
                    text,
                    u64::from(MIN_ITERATIONS),
                    u64::from(MAX_ITERATIONS),
                    &bound,
                )?,
            };
            Ask::MonteCarlo { iterations }
        }
        _ => Ask::Health,
    })
}

/// Whether a query parameter's name is a credential's.
fn is_key_name(name: &str) -> bool {
    let folded: String =
        name.chars().filter(|c| *c != '-' && *c != '_').flat_map(char::to_lowercase).collect();
    KEY_NAMES.contains(&folded.as_str())
}

fn required<'a>(field: &str, value: Option<&'a str>, bound: &str) -> Result<&'a str, BadRequest> {
    value.ok_or_else(|| {
        BadRequest::field(field, format!("query parameter {field} is missing; it must be {bound}"))
    })
}

/// An unsigned decimal in `min..=max` (digits only: no sign, space, point or exponent).
fn unsigned(field: &str, text: &str, min: u64, max: u64, bound: &str) -> Result<u32, BadRequest> {
    let malformed = || {
        BadRequest::field(
            field,
            format!("{field} is {:?}, must be a decimal integer in {bound}", echo(text)),
        )
    };
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    let out_of_range =
        || BadRequest::field(field, format!("{field} is {}, must be {bound}", echo(text)));
    let value: u64 = text.parse().map_err(|_| out_of_range())?;
    if value < min || value > max {
        return Err(out_of_range());
    }
    u32::try_from(value).map_err(|_| out_of_range())
}

/// A signed decimal within the 64-bit range.
fn signed(field: &str, text: &str) -> Result<i64, BadRequest> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    let value = if ok { text.parse::<i64>().ok() } else { None };
    value.ok_or_else(|| {
        BadRequest::field(
            field,
            format!(
                "{field} is {:?}, must be a decimal integer in {}..={}",
                echo(text),
                i64::MIN,
                i64::MAX
            ),
        )
    })
}

/// The original's encodings and their aliases, any case.
fn encoding(text: &str) -> Result<Encoding, BadRequest> {
    match text.to_ascii_lowercase().as_str() {
        "hex" | "hexadecimal" => Ok(Encoding::Hex),
        "base64" | "b64" => Ok(Encoding::Base64),
        "binary" | "raw" => Ok(Encoding::Binary),
        _ => Err(BadRequest::field(
            "encoding",
            format!("encoding is {:?}, must be hex, base64 or binary", echo(text)),
        )),
    }
}

/// `text` cut to [`ECHO_CHARS`] characters, for a message.
fn echo(text: &str) -> String {
    let mut out: String = text.chars().take(ECHO_CHARS).collect();
    if text.chars().count() > ECHO_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(path: &str, query: &str) -> BadRequest {
        read(path, Some(query)).expect_err(query)
    }

    #[test]
    fn the_original_queries_read_with_its_defaults() {
        assert_eq!(
            read("/api/random", Some("bytes=32")),
            Ok(Ask::Random { bytes: 32, encoding: Encoding::Hex })
        );
        assert_eq!(
            read("/api/random", Some("bytes=1048576&encoding=RAW")),
            Ok(Ask::Random { bytes: 1 << 20, encoding: Encoding::Binary })
        );
        assert_eq!(
            read("/api/integers", Some("count=3")),
            Ok(Ask::Integers { count: 3, min: 0, max: 100 })
        );
        assert_eq!(
            read("/api/integers", Some("count=1&min=-9223372036854775808&max=9223372036854775807")),
            Ok(Ask::Integers { count: 1, min: i64::MIN, max: i64::MAX })
        );
        assert_eq!(read("/api/uuid", None), Ok(Ask::Uuids { count: 1 }));
        assert_eq!(read("/api/status", None), Ok(Ask::Status));
        assert_eq!(
            read("/api/test/monte-carlo", None),
            Ok(Ask::MonteCarlo { iterations: 500_000 })
        );
        assert_eq!(read("/health", Some("")), Ok(Ask::Health));
    }

    #[test]
    fn every_bad_parameter_is_named_with_its_bound() {
        for (path, query, field, says) in [
            ("/api/random", "", "bytes", "missing; it must be 1..=1048576"),
            ("/api/random", "bytes=0", "bytes", "bytes is 0, must be 1..=1048576"),
            ("/api/random", "bytes=1048577", "bytes", "must be 1..=1048576"),
            ("/api/random", "bytes=99999999999999999999999", "bytes", "must be 1..=1048576"),
            ("/api/random", "bytes=%2B5", "bytes", "decimal integer in 1..=1048576"),
            ("/api/random", "bytes=5.0", "bytes", "decimal integer"),
            ("/api/random", "bytes=", "bytes", "decimal integer"),
            ("/api/random", "bytes=1&encoding=utf8", "encoding", "hex, base64 or binary"),
            ("/api/random", "bytes=1&bytes=2", "bytes", "given twice"),
            ("/api/random", "bytes=1&size=2", "size", "accepted: bytes, encoding"),
            ("/api/integers", "count=1&min=5&max=3", "min", "min (5) must be <= max (3)"),
            ("/api/integers", "count=1&min=-9223372036854775809", "min", "-9223372036854775808.."),
            ("/api/integers", "count=1&max=9223372036854775808", "max", "..=9223372036854775807"),
            ("/api/integers", "count=1&max=1e3", "max", "decimal integer"),
            ("/api/integers", "count=1&max=-", "max", "decimal integer"),
            ("/api/integers", "count=10001", "count", "must be 1..=10000"),
            ("/api/floats", "count=0", "count", "must be 1..=10000"),
            ("/api/floats", "", "count", "missing"),
            ("/api/uuid", "count=-1", "count", "decimal integer in 1..=10000"),
            ("/api/status", "x=1", "x", "accepted: none"),
            ("/api/test/monte-carlo", "iterations=416", "iterations", "must be 417..=699050"),
            ("/api/test/monte-carlo", "iterations=1000000", "iterations", "must be 417..=699050"),
        ] {
            let e = refused(path, query);
            assert_eq!(e.status, http::StatusCode::BAD_REQUEST, "{query}");
            assert_eq!(e.field.as_deref(), Some(field), "{query}: {e:?}");
            assert!(e.message.contains(says), "{query}: {}", e.message);
        }
    }

    #[test]
    fn a_key_in_the_url_is_refused_first_in_any_spelling() {
        for query in
            ["api_key=k", "bytes=0&API-KEY=k", "key=k", "apiKey=k", "access_token=k", "Token=k"]
        {
            let e = refused("/api/random", query);
            assert_eq!(e.status, http::StatusCode::BAD_REQUEST);
            assert!(e.message.contains("never in the URL"), "{query}: {}", e.message);
            assert!(e.message.contains("browser history"), "{}", e.message);
        }
        // Even on a route that does not exist.
        assert!(refused("/api/nothing", "api_key=k").message.contains("never in the URL"));
        assert_eq!(refused("/api/nothing", "").status, http::StatusCode::NOT_FOUND);
    }

    #[test]
    fn echoed_values_are_cut_short() {
        let long = "9".repeat(200);
        let e = refused("/api/random", &format!("bytes={long}"));
        assert!(e.message.len() < 120, "{}", e.message);
    }
}
