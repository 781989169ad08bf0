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
//! (Streamable HTTP: the gate of Origin, Host, token and caps) with [`dns_rebinding`],
//! [`sessions`] (the session caps, per token too) and [`refusal`] (every refusal's status and
//! throttled log line), [`listener`] (accept loop, connection cap, header and idle timeouts)
//! with [`activity`] (what keeps a connection open), [`bounds`] (the worst case, as a formula
//! of the config), and [`serve`] (running either transport until shutdown). The binary only
//! composes these.

pub mod activity;
pub mod args;
pub mod bounds;
pub mod config;
pub mod dice;
pub mod dns_rebinding;
pub mod draw;
pub mod gateway;
pub mod http;
pub mod listener;
pub mod password;
pub mod refusal;
pub mod results;
pub mod serve;
pub mod sessions;
pub mod tokens;
pub mod tools;
