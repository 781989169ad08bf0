//! Config keys declared once. [`config_keys!`] takes each scalar key's name, type, default,
//! flag value name, unit and one-line meaning, and generates from that one declaration: the
//! config struct (serde, every field documented), its `Default`, the `--<key>` override flags
//! (clap, all optional), the list of keys (for `ENTROPY_<KEY>` variables) and the
//! [`KeyDoc`] rows `docs/config.md` is generated from.

/// What the reference documentation says of one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// The key (and, upper-cased with `ENTROPY_`, its variable; dashed, its flag).
    pub key: &'static str,
    /// Its unit or kind of value ("milliseconds", "bytes", "path", ...).
    pub unit: &'static str,
    /// One line on what it does (the flag's help).
    pub help: &'static str,
}

/// A flag's help: `help`, then `[default: X]` when the key has a default (shown as a config
/// file would hold it, strings without quotes).
pub fn help_with_default<T: serde::Serialize>(help: &str, default: &T) -> String {
    let shown = match toml::Value::try_from(default) {
        Ok(toml::Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(_) => String::new(), // `None`: no default
    };
    if shown.is_empty() { help.to_owned() } else { format!("{help} [default: {shown}]") }
}

/// Declares a config struct, its flags, key list and docs from one list of keys.
///
/// ```ignore
/// entropy_ops::config_keys! {
///     /// Every setting.
///     #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
///     #[serde(deny_unknown_fields, default)]
///     pub struct Config;
///     /// `--<key>` overrides.
///     pub struct Flags;
///     keys {
///         /// Public gRPC address.
///         listen_addr: SocketAddr = SocketAddr::from(([0, 0, 0, 0], 50051)),
///             flag(SocketAddr, "ADDR"), unit("host:port"), help("Public gRPC address");
///     }
///     other {
///         /// Entropy sources (not a flag: a list of tables).
///         source: Vec<Source> = Vec::new();
///     }
/// }
/// ```
///
/// A key whose field is `Option<T>` has flag type `T` and default `None`. Attributes before a
/// key (its doc comment, a `#[serde(with = ...)]`) go on the config struct's field.
#[macro_export]
macro_rules! config_keys {
    (
        $(#[$config_meta:meta])*
        pub struct $config:ident;
        $(#[$flags_meta:meta])*
        pub struct $flags:ident;
        keys {
            $(
                $(#[$meta:meta])*
                $key:ident : $ty:ty = $default:expr,
                    flag($flag_ty:ty, $value_name:literal), unit($unit:literal), help($help:literal);
            )*
        }
        other {
            $(
                $(#[$other_meta:meta])*
                $other:ident : $other_ty:ty = $other_default:expr;
            )*
        }
    ) => {
        $(#[$config_meta])*
        pub struct $config {
            $( $(#[$meta])* pub $key: $ty, )*
            $( $(#[$other_meta])* pub $other: $other_ty, )*
        }

        impl Default for $config {
            fn default() -> Self {
                Self { $( $key: $default, )* $( $other: $other_default, )* }
            }
        }

        $(#[$flags_meta])*
        #[derive(Debug, Default, Clone, clap::Args, serde::Serialize)]
        pub struct $flags {
            $(
                #[doc = $help]
                #[arg(
                    long,
                    value_name = $value_name,
                    help = $crate::config_keys::help_with_default(
                        $help,
                        &<$config as Default>::default().$key,
                    ),
                )]
                #[serde(skip_serializing_if = "Option::is_none")]
                pub $key: Option<$flag_ty>,
            )*
        }

        /// Every scalar config key, in declaration order (environment variables, flags).
        pub const KEYS: &[&str] = &[ $( stringify!($key), )* ];

        /// What the reference documentation says of each key, in declaration order.
        pub const KEY_DOCS: &[$crate::config_keys::KeyDoc] = &[
            $( $crate::config_keys::KeyDoc { key: stringify!($key), unit: $unit, help: $help }, )*
        ];
    };
}

/// A list-valued key's flag: `--key a,b,c` (commas separate; empty items are dropped, so
/// `--key ""` is the empty list). Serialized as the list, so it overrides the file's list.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(transparent)]
pub struct CommaList(pub Vec<String>);

impl std::str::FromStr for CommaList {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.split(',').map(str::trim).filter(|v| !v.is_empty()).map(String::from).collect()))
    }
}

/// `metrics_listen_addr`-style keys: an address, or `""` for off. Typed as
/// `Option<SocketAddr>`; the file keeps the string form.
pub mod optional_addr {
    use std::net::SocketAddr;

    use serde::{Deserialize, Deserializer, Serializer};

    /// `None` as `""`, an address as `host:port`.
    pub fn serialize<S: Serializer>(addr: &Option<SocketAddr>, s: S) -> Result<S::Ok, S::Error> {
        match addr {
            Some(addr) => s.collect_str(addr),
            None => s.serialize_str(""),
        }
    }

    /// `""` as `None`; anything else must be an address.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
        let text = String::deserialize(d)?;
        if text.is_empty() {
            return Ok(None);
        }
        text.parse().map(Some).map_err(|_| {
            serde::de::Error::custom(format!(
                "{text:?} is not an address like 0.0.0.0:9464 (\"\" turns the endpoint off)"
            ))
        })
    }
}
