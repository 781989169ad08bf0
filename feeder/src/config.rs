//! The feeder's configuration: a TOML file of scalar keys, overridden by `ENTROPY_FEEDER_<KEY>`
//! environment variables and then by `--<key>` flags ([`ConfigFlags`]), each key declared once
//! here (`entropy_ops::config_keys!`). What a key's type cannot say is checked in
//! [`FeederConfig::validate`] before anything is opened; `main` exits 64 naming the key and the
//! bound.
//!
//! The API key is not a config key: it comes from the file `api_key_file` names, else from
//! `ENTROPY_API_KEY` ([`read_api_key`]), and is never logged or printed (`--print-config` shows
//! only the file's path).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use entropy_ops::LogFormat;
use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use zeroize::Zeroizing;

pub use entropy_ops::ConfigError;

/// The variable holding the API key when `api_key_file` is "".
pub const API_KEY_ENV: &str = "ENTROPY_API_KEY";
/// The prefix of the variables overriding config keys.
pub const ENV_PREFIX: &str = "ENTROPY_FEEDER_";

entropy_ops::config_keys! {
    /// Everything the feeder needs (the contract's keys, feeder-contract.md).
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields, default)]
    pub struct FeederConfig;
    /// Command-line overrides of the keys (`--<key>`), applied after the file and the
    /// environment.
    pub struct ConfigFlags;
    keys {
        /// The gateway: `https://host:port` (TLS) or `http://host:port` (plaintext, dev only).
        gateway_endpoint: String = String::new(),
            flag(String, "URL"), unit("`https://host:port` or `http://host:port`"),
            help("The gateway: https://host:port, or http://host:port (dev only)");
        /// File holding the API key (scope `entropy:feed`); "" reads `ENTROPY_API_KEY`.
        api_key_file: PathBuf = PathBuf::new(),
            flag(PathBuf, "FILE"), unit("path"),
            help("File holding the API key; \"\" reads ENTROPY_API_KEY");
        /// PEM roots for the gateway's certificate; "" uses the client library's default.
        ca_file: PathBuf = PathBuf::new(),
            flag(PathBuf, "FILE"), unit("path"),
            help("PEM roots for the gateway's certificate; \"\" for the default roots");
        /// StreamRandom message size.
        chunk_bytes: u32 = 4096,
            flag(u32, "BYTES"), unit("bytes, 256..=65536"),
            help("StreamRandom message size, bytes");
        /// Health-tested bytes held ready for the kernel and EGD clients.
        buffer_bytes: usize = 65536,
            flag(usize, "BYTES"), unit("bytes, 4096..=16777216"),
            help("Health-tested bytes held ready, bytes");
        /// The min-entropy per byte the health tests' cutoffs assume.
        min_entropy_bits_per_byte: f64 = 7.0,
            flag(f64, "BITS"), unit("bits per byte, (0, 8]"),
            help("Min-entropy per byte the health-test cutoffs assume");
        /// Feed the kernel's RNG.
        kernel_feed: bool = true,
            flag(bool, "BOOL"), unit("true or false"),
            help("Feed the kernel's RNG");
        /// The device polled (is the kernel asking?) and fed (RNDADDENTROPY).
        random_device: PathBuf = PathBuf::from("/dev/random"),
            flag(PathBuf, "PATH"), unit("path"),
            help("The device polled and fed");
        /// Bytes per RNDADDENTROPY write.
        feed_bytes: usize = 64,
            flag(usize, "BYTES"), unit("bytes, 1..=4096"),
            help("Bytes per RNDADDENTROPY write");
        /// Entropy credited to the kernel per byte fed (conservative: the gateway sees what it
        /// feeds).
        credit_bits_per_byte: u32 = 2,
            flag(u32, "BITS"), unit("bits per byte, 0..=8"),
            help("Entropy credited per byte fed, bits");
        /// 0: write only when the kernel asks; else also one write per interval (kernels from
        /// 5.18 on ask only until their CRNG is ready).
        refresh_interval_ms: u64 = 0,
            flag(u64, "MS"), unit("milliseconds, 0 or 1000..=86400000"),
            help("Also feed once per interval, ms; 0 feeds only when the kernel asks");
        /// Unix socket path of the EGD server; "" turns it off.
        egd_socket: PathBuf = PathBuf::new(),
            flag(PathBuf, "PATH"), unit("path"),
            help("Unix socket of the EGD server; \"\" for none");
        /// File mode of the EGD socket, octal.
        egd_socket_mode: String = "0660".into(),
            flag(String, "MODE"), unit("octal, at most 0777"),
            help("File mode of the EGD socket (octal)");
        /// Most EGD clients connected at once.
        egd_max_clients: usize = 16,
            flag(usize, "N"), unit("count, 1..=1024"),
            help("Most EGD clients at once");
        /// An EGD client that leaves a command half-sent, or does not read a reply, for this
        /// long is closed. A client idle between commands is kept: QEMU connects once and asks
        /// only when its guest reads.
        egd_idle_timeout_ms: u64 = 30_000,
            flag(u64, "MS"), unit("milliseconds, 1..=3600000"),
            help("Idle EGD clients are closed after this, ms");
        /// HTTP address of `/metrics`, `/healthz` and `/readyz`; "" turns the endpoint off.
        #[serde(with = "entropy_ops::config_keys::optional_addr")]
        metrics_listen_addr: Option<SocketAddr> = Some(SocketAddr::from(([127, 0, 0, 1], 9466))),
            flag(String, "ADDR"), unit("host:port"),
            help("Metrics/health HTTP address, \"\" for none");
        /// Boot mode's limit, connecting included.
        boot_timeout_ms: u64 = 10_000,
            flag(u64, "MS"), unit("milliseconds, 100..=600000"),
            help("Boot mode's time limit, ms");
        /// Log format: "text" or "json".
        log_format: LogFormat = LogFormat::Text,
            flag(LogFormat, "FORMAT"), unit("`text` or `json`"),
            help("Log format: text or json");
    }
    other {}
}

/// Bounds of the numeric keys (the unit column above says the same).
pub mod bounds {
    use std::ops::RangeInclusive;

    /// `chunk_bytes`.
    pub const CHUNK_BYTES: RangeInclusive<u32> = 256..=65536;
    /// `buffer_bytes`: at least one message of the largest chunk would not fit, so the supply
    /// reads at most half the buffer at a time (supply.rs).
    pub const BUFFER_BYTES: RangeInclusive<usize> = 4096..=16 << 20;
    /// `feed_bytes` (at most the smallest buffer, so a feed never waits for more than fits).
    pub const FEED_BYTES: RangeInclusive<usize> = 1..=4096;
    /// `credit_bits_per_byte`.
    pub const CREDIT_BITS_PER_BYTE: RangeInclusive<u32> = 0..=8;
    /// `refresh_interval_ms`, when not 0: no faster than once a second, no slower than daily.
    pub const REFRESH_INTERVAL_MS: RangeInclusive<u64> = 1000..=86_400_000;
    /// `egd_max_clients`.
    pub const EGD_MAX_CLIENTS: RangeInclusive<usize> = 1..=1024;
    /// `egd_idle_timeout_ms`.
    pub const EGD_IDLE_TIMEOUT_MS: RangeInclusive<u64> = 1..=3_600_000;
    /// `boot_timeout_ms`.
    pub const BOOT_TIMEOUT_MS: RangeInclusive<u64> = 100..=600_000;
}

impl FeederConfig {
    /// Loads `path`, applies `ENTROPY_FEEDER_*` overrides and then `flags`, validates.
    pub fn load(path: &Path, flags: &ConfigFlags) -> Result<Self, ConfigError> {
        if !path.is_file() {
            return Err(ConfigError::new(
                "--config",
                format!("{} is not a readable file", path.display()),
            ));
        }
        let figment = Figment::from(Toml::file_exact(path))
            .merge(Env::prefixed(ENV_PREFIX).only(KEYS))
            .merge(Serialized::defaults(flags));
        Self::extract(figment)
    }

    /// Parses and validates a config given as TOML text (tests); no environment or flags.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        Self::extract(Figment::from(Toml::string(text)))
    }

    fn extract(figment: Figment) -> Result<Self, ConfigError> {
        let config: Self = figment.extract().map_err(|e| {
            let mut error = ConfigError::from_layered(&e);
            // from_layered names the gateway's prefix; ours is ENTROPY_FEEDER_.
            error.problem = error.problem.replace(
                &format!("environment variable ENTROPY_{}", error.key.to_uppercase()),
                &format!("environment variable {ENV_PREFIX}{}", error.key.to_uppercase()),
            );
            error
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every key's bound and the relations between keys; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let endpoint = &self.gateway_endpoint;
        if endpoint.is_empty() {
            return bad("gateway_endpoint", "required: https://host:port (or http:// for dev)");
        }
        let Some(rest) =
            endpoint.strip_prefix("https://").or_else(|| endpoint.strip_prefix("http://"))
        else {
            return bad(
                "gateway_endpoint",
                format!("{endpoint:?} must start with https:// (or http:// for dev)"),
            );
        };
        if rest.is_empty() || rest.contains(['/', '?', '@']) {
            return bad(
                "gateway_endpoint",
                format!("{endpoint:?} must be scheme://host:port, without a path or user"),
            );
        }
        if !self.ca_file.as_os_str().is_empty() && endpoint.starts_with("http://") {
            return bad("ca_file", "set with an http:// endpoint: TLS needs https://");
        }
        in_range("chunk_bytes", self.chunk_bytes, bounds::CHUNK_BYTES)?;
        in_range("buffer_bytes", self.buffer_bytes, bounds::BUFFER_BYTES)?;
        let h = self.min_entropy_bits_per_byte;
        if !(h > 0.0 && h <= 8.0) {
            return bad("min_entropy_bits_per_byte", format!("{h} must be in (0, 8]"));
        }
        if self.kernel_feed && self.random_device.as_os_str().is_empty() {
            return bad("random_device", "required when kernel_feed is true");
        }
        in_range("feed_bytes", self.feed_bytes, bounds::FEED_BYTES)?;
        in_range("credit_bits_per_byte", self.credit_bits_per_byte, bounds::CREDIT_BITS_PER_BYTE)?;
        if self.refresh_interval_ms != 0 {
            in_range("refresh_interval_ms", self.refresh_interval_ms, bounds::REFRESH_INTERVAL_MS)
                .map_err(|e| ConfigError::new(e.key, format!("{} (or 0 for none)", e.problem)))?;
        }
        self.egd_mode()?;
        in_range("egd_max_clients", self.egd_max_clients, bounds::EGD_MAX_CLIENTS)?;
        in_range("egd_idle_timeout_ms", self.egd_idle_timeout_ms, bounds::EGD_IDLE_TIMEOUT_MS)?;
        in_range("boot_timeout_ms", self.boot_timeout_ms, bounds::BOOT_TIMEOUT_MS)?;
        if !self.kernel_feed && self.egd_socket.as_os_str().is_empty() {
            return bad(
                "kernel_feed",
                "false while egd_socket is \"\": the feeder would feed nothing",
            );
        }
        Ok(())
    }

    /// `egd_socket_mode` as a number: octal digits, at most 0o777.
    pub fn egd_mode(&self) -> Result<u32, ConfigError> {
        let text = &self.egd_socket_mode;
        match u32::from_str_radix(text, 8) {
            Ok(mode) if mode <= 0o777 && !text.is_empty() => Ok(mode),
            _ => bad("egd_socket_mode", format!("{text:?} must be octal digits, at most 0777")),
        }
    }

    /// The EGD socket's path, or `None` when EGD is off.
    pub fn egd_socket(&self) -> Option<&Path> {
        (!self.egd_socket.as_os_str().is_empty()).then_some(self.egd_socket.as_path())
    }

    /// `ca_file`, or `None` for the client library's default roots.
    pub fn ca_file(&self) -> Option<&Path> {
        (!self.ca_file.as_os_str().is_empty()).then_some(self.ca_file.as_path())
    }

    /// `refresh_interval_ms` as a duration, `None` for 0 (feed only when asked).
    pub fn refresh_interval(&self) -> Option<Duration> {
        (self.refresh_interval_ms > 0).then(|| Duration::from_millis(self.refresh_interval_ms))
    }

    /// `egd_idle_timeout_ms` as a duration.
    pub fn egd_idle_timeout(&self) -> Duration {
        Duration::from_millis(self.egd_idle_timeout_ms)
    }

    /// `boot_timeout_ms` as a duration.
    pub fn boot_timeout(&self) -> Duration {
        Duration::from_millis(self.boot_timeout_ms)
    }
}

/// The API key, wiped when dropped; its `Debug` shows nothing of it.
pub struct ApiKey(Zeroizing<String>);

impl ApiKey {
    /// The key's text, to hand to the client library.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(REDACTED)")
    }
}

/// The API key from `api_key_file` (surrounding whitespace trimmed, so a trailing newline is
/// fine), else from `env_key` (the value of [`API_KEY_ENV`]); checked by the client library's
/// rules. The error names where the key was looked for, never the key.
pub fn read_api_key(config: &FeederConfig, env_key: Option<String>) -> Result<ApiKey, ConfigError> {
    let (key, from) = if config.api_key_file.as_os_str().is_empty() {
        let key = env_key.filter(|k| !k.is_empty()).ok_or_else(|| {
            ConfigError::new("api_key_file", format!("\"\" and {API_KEY_ENV} is not set"))
        })?;
        (Zeroizing::new(key), API_KEY_ENV.to_owned())
    } else {
        let path = &config.api_key_file;
        let text = Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
            ConfigError::new("api_key_file", format!("cannot read {}: {e}", path.display()))
        })?);
        (Zeroizing::new(text.trim().to_owned()), path.display().to_string())
    };
    entropy_diode_client::api_key::check(&key)
        .map_err(|e| ConfigError::new("api_key_file", format!("the key from {from}: {e}")))?;
    Ok(ApiKey(key))
}

fn in_range<T: PartialOrd + std::fmt::Display>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<(), ConfigError> {
    if range.contains(&value) {
        return Ok(());
    }
    bad(key, format!("{value} must be {}..={}", range.start(), range.end()))
}

fn bad<T>(key: impl Into<String>, problem: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::new(key, problem))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "gateway_endpoint = \"https://gw.example:50051\"\n";

    fn with(extra: &str) -> Result<FeederConfig, ConfigError> {
        FeederConfig::from_toml(&format!("{MINIMAL}{extra}\n"))
    }

    fn rejects(extra: &str, key: &str, says: &str) {
        let e = with(extra).expect_err(extra);
        assert_eq!(e.key, key, "{extra}: {e}");
        assert!(e.to_string().contains(says), "{extra}: {e} should say {says:?}");
    }

    #[test]
    fn defaults_are_the_contracts() {
        let c = with("").expect("minimal config");
        assert_eq!(c.chunk_bytes, 4096);
        assert_eq!(c.buffer_bytes, 65536);
        assert_eq!(c.min_entropy_bits_per_byte, 7.0);
        assert!(c.kernel_feed);
        assert_eq!(c.random_device, PathBuf::from("/dev/random"));
        assert_eq!((c.feed_bytes, c.credit_bits_per_byte, c.refresh_interval_ms), (64, 2, 0));
        assert_eq!(c.egd_socket(), None);
        assert_eq!(c.egd_mode(), Ok(0o660));
        assert_eq!((c.egd_max_clients, c.egd_idle_timeout_ms), (16, 30_000));
        assert_eq!(c.metrics_listen_addr, Some(SocketAddr::from(([127, 0, 0, 1], 9466))));
        assert_eq!(c.boot_timeout_ms, 10_000);
        assert_eq!(c.log_format, LogFormat::Text);
    }

    #[test]
    fn every_bound_is_enforced_at_both_ends_and_named() {
        for (extra, key, says) in [
            ("chunk_bytes = 255", "chunk_bytes", "256..=65536"),
            ("chunk_bytes = 65537", "chunk_bytes", "256..=65536"),
            ("buffer_bytes = 4095", "buffer_bytes", "4096..=16777216"),
            ("buffer_bytes = 16777217", "buffer_bytes", "4096..=16777216"),
            ("min_entropy_bits_per_byte = 0.0", "min_entropy_bits_per_byte", "(0, 8]"),
            ("min_entropy_bits_per_byte = 8.01", "min_entropy_bits_per_byte", "(0, 8]"),
            ("min_entropy_bits_per_byte = nan", "min_entropy_bits_per_byte", "(0, 8]"),
            ("feed_bytes = 0", "feed_bytes", "1..=4096"),
            ("feed_bytes = 4097", "feed_bytes", "1..=4096"),
            ("credit_bits_per_byte = 9", "credit_bits_per_byte", "0..=8"),
            ("refresh_interval_ms = 999", "refresh_interval_ms", "or 0"),
            ("refresh_interval_ms = 86400001", "refresh_interval_ms", "1000..=86400000"),
            ("egd_socket_mode = \"0778\"", "egd_socket_mode", "octal"),
            ("egd_socket_mode = \"1777\"", "egd_socket_mode", "at most 0777"),
            ("egd_max_clients = 0", "egd_max_clients", "1..=1024"),
            ("egd_max_clients = 1025", "egd_max_clients", "1..=1024"),
            ("egd_idle_timeout_ms = 0", "egd_idle_timeout_ms", "1..=3600000"),
            ("boot_timeout_ms = 99", "boot_timeout_ms", "100..=600000"),
            ("boot_timeout_ms = 600001", "boot_timeout_ms", "100..=600000"),
            ("random_device = \"\"", "random_device", "kernel_feed"),
            ("kernel_feed = false", "kernel_feed", "nothing"),
            ("log_format = \"xml\"", "log_format", "xml"),
            ("unknown_key = 1", "unknown_key", "unknown"),
        ] {
            rejects(extra, key, says);
        }
        // The bounds themselves are accepted.
        for extra in [
            "chunk_bytes = 256\nbuffer_bytes = 4096\nfeed_bytes = 4096\ncredit_bits_per_byte = 0",
            "chunk_bytes = 65536\nbuffer_bytes = 16777216\nfeed_bytes = 1\ncredit_bits_per_byte = 8",
            "min_entropy_bits_per_byte = 8.0\nrefresh_interval_ms = 1000\nboot_timeout_ms = 100",
            "refresh_interval_ms = 86400000\nboot_timeout_ms = 600000\negd_max_clients = 1024",
            "kernel_feed = false\negd_socket = \"/run/egd.sock\"\negd_socket_mode = \"0777\"",
        ] {
            with(extra).unwrap_or_else(|e| panic!("{extra}: {e}"));
        }
    }

    #[test]
    fn the_endpoint_is_required_and_has_a_scheme() {
        let e = FeederConfig::from_toml("").expect_err("no endpoint");
        assert_eq!(e.key, "gateway_endpoint");
        for endpoint in ["gw:50051", "ftp://gw:1", "https://", "https://u@gw:1", "http://gw:1/x"] {
            let e = FeederConfig::from_toml(&format!("gateway_endpoint = {endpoint:?}"))
                .expect_err(endpoint);
            assert_eq!(e.key, "gateway_endpoint", "{endpoint}");
        }
        let e = FeederConfig::from_toml("gateway_endpoint = \"http://gw:1\"\nca_file = \"/x.pem\"")
            .expect_err("ca with http");
        assert_eq!(e.key, "ca_file");
    }

    #[test]
    fn the_api_key_comes_from_its_file_or_the_environment_and_is_never_shown() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("key");
        std::fs::write(&file, "feeder-secret-1\n").expect("write key");
        let mut c = with("").expect("config");
        let e = read_api_key(&c, None).expect_err("no key anywhere");
        assert!(e.to_string().contains(API_KEY_ENV), "{e}");
        let key = read_api_key(&c, Some("env-secret-2".into())).expect("env key");
        assert_eq!(key.expose(), "env-secret-2");
        assert!(!format!("{key:?}").contains("secret"));
        c.api_key_file = file.clone();
        let key = read_api_key(&c, Some("env-secret-2".into())).expect("file key");
        assert_eq!(key.expose(), "feeder-secret-1", "the file wins, trimmed");
        std::fs::write(&file, "bad key with spaces").expect("write key");
        let e = read_api_key(&c, None).expect_err("spaces");
        assert!(!e.to_string().contains("spaces"), "echoes the key: {e}");
        c.api_key_file = dir.path().join("missing");
        assert_eq!(read_api_key(&c, None).expect_err("missing").key, "api_key_file");
        // --print-config prints the config struct: it holds the path, never the key.
        let printed = toml::to_string(&c).expect("print");
        assert!(printed.contains("api_key_file") && !printed.contains("secret"));
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment's Jail API fixes the closure's error type
    fn environment_and_flags_override_the_file_in_that_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("feeder.toml");
        std::fs::write(&path, format!("{MINIMAL}feed_bytes = 32\nchunk_bytes = 512\n"))
            .expect("write config");
        figment::Jail::expect_with(|jail| {
            jail.set_env("ENTROPY_FEEDER_FEED_BYTES", "128");
            jail.set_env("ENTROPY_FEEDER_CHUNK_BYTES", "1024");
            let flags = ConfigFlags { chunk_bytes: Some(2048), ..Default::default() };
            let c = FeederConfig::load(&path, &flags).map_err(|e| e.to_string())?;
            assert_eq!((c.feed_bytes, c.chunk_bytes), (128, 2048));
            jail.set_env("ENTROPY_FEEDER_FEED_BYTES", "0");
            let e = FeederConfig::load(&path, &ConfigFlags::default()).expect_err("env bound");
            assert_eq!(e.key, "feed_bytes");
            jail.set_env("ENTROPY_FEEDER_FEED_BYTES", "lots");
            let e = FeederConfig::load(&path, &ConfigFlags::default()).expect_err("env type");
            assert!(e.to_string().contains("ENTROPY_FEEDER_FEED_BYTES"), "{e}");
            Ok(())
        });
    }
}
