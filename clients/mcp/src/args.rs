//! Tool arguments: one struct per tool, whose doc comments and bounds become the JSON schema
//! agents read, and the checks that turn a bad argument into a tool error naming it and its
//! bound.
//!
//! Numbers are taken as `i64` whatever their bound, so an out-of-range value reaches the bound
//! check (and its message) rather than failing to deserialize.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::gateway::Failure;

/// Most bytes per `random_bytes` call: plenty for an agent, and they all land in its context.
pub const MAX_BYTES: i64 = 4096;
/// Most integers or floats per call.
pub const MAX_NUMBERS: i64 = 1000;
/// Most UUIDs per call.
pub const MAX_UUIDS: i64 = 100;
/// Most items in a list to shuffle or sample from.
pub const MAX_ITEMS: usize = 1000;

fn one() -> i64 {
    1
}

/// Parses a tool's arguments; a type error names the argument.
pub fn parse<T: DeserializeOwned>(args: serde_json::Map<String, Value>) -> Result<T, Failure> {
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            Failure::argument(format!("arguments: {inner}"))
        } else {
            Failure::argument(format!("argument `{path}`: {inner}"))
        }
    })
}

/// `value` if it is in `low..=high`, else an error naming `name` and the bound.
pub fn within(name: &str, value: i64, low: i64, high: i64) -> Result<i64, Failure> {
    if (low..=high).contains(&value) {
        Ok(value)
    } else {
        Err(Failure::argument(format!("argument `{name}` is {value}, must be {low}..={high}")))
    }
}

/// How to write random bytes as text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Lowercase hexadecimal, two characters per byte.
    #[default]
    Hex,
    /// Standard base64 with padding.
    Base64,
}

/// How random bytes are made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConstructionArg {
    /// Bytes of the gateway's pool, as its (quantum) sources made them, each served once.
    #[default]
    Raw,
    /// The output of a DRBG (NIST SP 800-90A CTR_DRBG, AES-256) seeded from the pool: far more
    /// bytes than the sources make, computationally (not physically) random.
    Drbg,
    /// As `drbg`, reseeded from the pool before every 64 KiB.
    DrbgPredictionResistant,
}

/// Arguments of `random_bytes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BytesArgs {
    /// How many random bytes (1..=4096).
    #[schemars(range(min = 1, max = MAX_BYTES))]
    pub count: i64,
    /// How to write them: "hex" (default) or "base64".
    #[serde(default)]
    pub encoding: Encoding,
    /// How they are made: "raw" (default: the pool's bytes), "drbg" or
    /// "drbg_prediction_resistant" (DRBG output seeded from the pool; needs this server's key
    /// to hold the gateway's `entropy:drbg` scope).
    #[serde(default)]
    pub construction: ConstructionArg,
}

/// Arguments of `random_integers`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntegersArgs {
    /// Smallest value, inclusive. Any 64-bit signed integer.
    pub min: i64,
    /// Largest value, inclusive (at least `min`). Any 64-bit signed integer.
    pub max: i64,
    /// How many integers (1..=1000, default 1). Each is drawn independently, so repeats are
    /// possible; use `sample` for distinct values.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_NUMBERS))]
    pub count: i64,
}

/// Arguments of `random_floats`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FloatsArgs {
    /// How many numbers (1..=1000, default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_NUMBERS))]
    pub count: i64,
}

/// Arguments of `random_uuids`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UuidsArgs {
    /// How many UUIDs (1..=100, default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_UUIDS))]
    pub count: i64,
}

/// Arguments of `roll_dice`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiceArgs {
    /// Dice notation NdM: N dice (1..=100, default 1) with M faces (2..=1000000), optionally
    /// plus or minus a modifier (at most 1000000), e.g. "3d6", "d20", "2d8+3", "4d10-2".
    #[schemars(length(min = 2, max = 32))]
    pub notation: String,
}

/// Arguments of `shuffle`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShuffleArgs {
    /// The list to shuffle (1..=1000 items of any JSON type), returned in a uniformly random
    /// order.
    #[schemars(length(min = 1, max = MAX_ITEMS))]
    pub items: Vec<Value>,
}

/// Arguments of `sample`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SampleArgs {
    /// The list to pick from (1..=1000 items of any JSON type). Equal items count separately.
    #[schemars(length(min = 1, max = MAX_ITEMS))]
    pub items: Vec<Value>,
    /// How many to pick, without replacement (1..=number of items, default 1).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = MAX_ITEMS))]
    pub k: i64,
}

/// Arguments of `generate_password`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordArgs {
    /// Number of characters (4..=256, default 20).
    #[serde(default = "default_length")]
    #[schemars(range(min = 4, max = 256))]
    pub length: i64,
    /// A named alphabet: "alphanumeric" (default, 62 characters), "printable" (94: ASCII
    /// letters, digits and punctuation), "unambiguous" (57: no 0/O, 1/l/I), "letters" (52),
    /// "lowercase" (26), "digits" (10) or "hex" (16).
    pub alphabet: Option<String>,
    /// Your own alphabet instead: 2..=256 distinct characters, e.g. "abc123". Not with
    /// `alphabet`.
    pub characters: Option<String>,
}

fn default_length() -> i64 {
    crate::password::DEFAULT_LENGTH as i64
}

/// Arguments of `generate_passphrase`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PassphraseArgs {
    /// Number of words (1..=32, default 6), each from a list of 2048 common English words
    /// (11 bits each).
    #[serde(default = "default_words")]
    #[schemars(range(min = 1, max = 32))]
    pub words: i64,
    /// Put between the words (0..=8 characters, default "-").
    #[serde(default = "default_separator")]
    #[schemars(length(max = 8))]
    pub separator: String,
}

fn default_words() -> i64 {
    crate::password::DEFAULT_WORDS as i64
}

fn default_separator() -> String {
    "-".into()
}

/// Arguments of `gateway_status`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn type_errors_name_the_argument() {
        let err = parse::<BytesArgs>(args(json!({"count": "many"}))).expect_err("type");
        assert!(err.message.starts_with("argument `count`"), "{}", err.message);
        let err =
            parse::<BytesArgs>(args(json!({"count": 1, "encoding": "b64"}))).expect_err("enum");
        assert!(
            err.message.contains("`encoding`") && err.message.contains("base64"),
            "{}",
            err.message
        );
        let err = parse::<BytesArgs>(args(json!({}))).expect_err("missing");
        assert!(err.message.contains("missing field `count`"), "{}", err.message);
        let err = parse::<NoArgs>(args(json!({"verbose": true}))).expect_err("unknown");
        assert!(err.message.contains("unknown field `verbose`"), "{}", err.message);
        assert_eq!(err.kind, "invalid_argument");
    }

    #[test]
    fn defaults_apply() {
        let a: IntegersArgs = parse(args(json!({"min": 1, "max": 6}))).expect("valid");
        assert_eq!(a.count, 1);
        let p: PassphraseArgs = parse(args(json!({}))).expect("valid");
        assert_eq!((p.words, p.separator.as_str()), (6, "-"));
        let b: BytesArgs = parse(args(json!({"count": 8}))).expect("valid");
        assert_eq!(b.encoding, Encoding::Hex);
    }

    #[test]
    fn bounds_are_checked_and_named() {
        assert_eq!(within("count", 5, 1, 10).ok(), Some(5));
        let err = within("count", 0, 1, 4096).expect_err("low");
        assert_eq!(err.message, "argument `count` is 0, must be 1..=4096");
    }

    #[test]
    fn schemas_state_the_bounds() {
        let schema = serde_json::to_value(schemars::schema_for!(BytesArgs)).expect("json");
        assert_eq!(schema["properties"]["count"]["maximum"], json!(4096));
        assert_eq!(schema["properties"]["count"]["minimum"], json!(1));
        let schema = serde_json::to_value(schemars::schema_for!(ShuffleArgs)).expect("json");
        assert_eq!(schema["properties"]["items"]["maxItems"], json!(1000));
    }
}
