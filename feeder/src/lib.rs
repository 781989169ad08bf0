//! `entropy-feeder`: entropy from a gateway, health-tested on arrival, fed to the machine it runs
//! on: the Linux kernel's RNG (`RNDADDENTROPY`, only when the kernel asks) and virtual machines
//! (an EGD socket for QEMU's `rng-egd`, so a guest's virtio-rng reads gateway bytes).
//!
//! Every byte goes to one consumer once: the kernel or one EGD client, never both, never twice.
//!
//! # Layout
//!
//! - `entropy.rs`: [`entropy::Entropy`], what the consumers take bytes from (a trait, so each
//!   consumer is tested against a fake).
//! - `supply.rs`: the real one: a StreamRandom from the gateway (the client library's
//!   reconnecting reader), each batch through the SP 800-90B continuous health tests
//!   (`entropy-health`, the collector's own), a bounded buffer of tested bytes.
//! - `kernel/`: the kernel's RNG: waiting until it asks (`POLLOUT` on `/dev/random`) and the
//!   `RNDADDENTROPY` ioctl (`kernel/ioctl.rs`, the crate's one unsafe block).
//! - `feed.rs`: the daemon's loop (feed when the kernel asks) and the one-shot boot mode.
//! - `egd.rs`: the EGD protocol server on a Unix socket.
//! - `config.rs`, `metrics.rs`: config (file, environment, flags) and the metrics endpoint.
//! - `main.rs`: the binary, thin.

pub mod config;
pub mod egd;
pub mod entropy;
pub mod feed;
pub mod kernel;
pub mod metrics;
pub mod supply;
