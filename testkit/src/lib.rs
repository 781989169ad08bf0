//! Test support shared by the Entropy Diode crates' tests, benches and fuzz targets. A
//! dev-dependency only: no product binary links it.
//!
//! Layout:
//! - [`exposition`]: a parser of the Prometheus text exposition, to assert on `/metrics`.
//! - [`docs_table`]: `docs/metrics.md` checked both ways against what `/metrics` exposes.
//! - [`chunk`]: the one signed-chunk fixture (a `PublishRequest` a gateway accepts as it is).
//! - [`config_reference`]: docs/config.md's key tables, generated and checked.
//! - [`http`]: a one-shot HTTP/1.1 GET, for the probes and the metrics page.

pub mod chunk;
pub mod config_reference;
pub mod docs_table;
pub mod exposition;
pub mod http;
