//! entropy-mcp: an MCP server that gives AI agents fair randomness (dice, shuffles, samples,
//! passwords, numbers, UUIDs, bytes) drawn from an Entropy Diode gateway.
//!
//! It is a gRPC client of the gateway through `entropy-diode-client`, never a reader of the pool, so
//! every byte is served once, under this server's key, quota and metrics.
//!
//! Layout: [`config`] (layered config, the gateway key), [`gateway`] (calls and the messages
//! for refusals), [`tools`] (the MCP handler: tools and the status resource), [`args`] and
//! [`results`] (tool schemas), [`draw`] (unbiased indices, shuffle, sample), [`dice`],
//! [`password`] (alphabets and the word list), [`tokens`] (HTTP bearer tokens), [`http`]
//! (Streamable HTTP: auth, Origin, limits, TLS) with [`sessions`] (the session cap), and
//! [`serve`] (running either transport until shutdown). The binary only composes these.

pub mod args;
pub mod config;
pub mod dice;
pub mod draw;
pub mod gateway;
pub mod http;
pub mod password;
pub mod results;
pub mod serve;
pub mod sessions;
pub mod tokens;
pub mod tools;
