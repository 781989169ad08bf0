//! The MCP server: the tool list agents see, each tool's work, and the status resource.
//!
//! Every tool draws from the gateway at call time; nothing is cached or drawn ahead, so each
//! value an agent gets was served once, to this server's key, for that call. Bad arguments and
//! gateway refusals come back as tool errors (`isError`) with a message naming the argument and
//! its bound, or saying what to do; the JSON-RPC error channel is kept for requests that cannot
//! be routed (an unknown tool or resource).
//!
//! There is no tool for the gateway's CheckQuality yet (and deliberately no placeholder).

use std::sync::Arc;

use base64::Engine as _;
use rmcp::handler::server::common::{schema_for_output, schema_for_type};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::args::{self, Encoding, within};
use crate::dice::Dice;
use crate::draw;
use crate::gateway::{Failure, Gateway};
use crate::password;
use crate::results::{
    BytesResult, DiceResult, FloatsResult, IntegersResult, PassphraseResult, PasswordResult,
    SampleResult, ShuffleResult, StatusReport, UuidsResult,
};
use entropy_diode_client::Construction;

/// URI of the status resource.
pub const STATUS_URI: &str = "entropy://gateway/status";

/// What every agent reads first (the `instructions` of `initialize`).
const INSTRUCTIONS: &str = "Randomness from an Entropy Diode gateway (quantum or hardware \
entropy, each byte served once). Use these tools whenever you need a fair choice: dice, \
shuffles, picking without replacement, random numbers, UUIDs, passwords. Do not invent random \
values yourself. Everything returned ends up in this conversation's transcript: use it for \
games, sampling, simulations and tests, never as a secret key. gateway_status tells whether the \
bytes are quantum right now.";

/// The server: a gateway client and the tool list, shared by every session.
#[derive(Clone)]
pub struct EntropyServer {
    gateway: Gateway,
    tools: Arc<Vec<Tool>>,
    words: Arc<Vec<&'static str>>,
}

impl EntropyServer {
    /// A server drawing from `gateway`.
    pub fn new(gateway: Gateway) -> Self {
        Self { gateway, tools: Arc::new(tool_list()), words: Arc::new(password::words()) }
    }

    /// Runs the tool `name`; `None` when there is no such tool.
    async fn run(&self, name: &str, args: JsonObject) -> Option<Result<Value, Failure>> {
        Some(match name {
            "random_bytes" => self.random_bytes(args).await,
            "random_integers" => self.random_integers(args).await,
            "random_floats" => self.random_floats(args).await,
            "random_uuids" => self.random_uuids(args).await,
            "roll_dice" => self.roll_dice(args).await,
            "shuffle" => self.shuffle(args).await,
            "sample" => self.sample(args).await,
            "generate_password" => self.generate_password(args).await,
            "generate_passphrase" => self.generate_passphrase(args).await,
            "gateway_status" => self.gateway_status(args).await,
            _ => return None,
        })
    }

    async fn random_bytes(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::BytesArgs = args::parse(args)?;
        let count = within("count", a.count, 1, args::MAX_BYTES)? as usize;
        let construction = match a.construction {
            args::ConstructionArg::Raw => Construction::Raw,
            args::ConstructionArg::Drbg => Construction::Drbg,
            args::ConstructionArg::DrbgPredictionResistant => Construction::DrbgPredictionResistant,
        };
        let draw = self.gateway.draw(count, construction).await?;
        let data = match a.encoding {
            Encoding::Hex => hex::encode(&draw.data),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(&draw.data),
        };
        let encoding = if a.encoding == Encoding::Hex { "hex" } else { "base64" };
        let label = draw.provenance.as_ref().and_then(|p| p.drbg.as_ref());
        json(BytesResult {
            encoding: encoding.into(),
            data,
            bytes: count,
            construction: if label.is_some() { "drbg" } else { "raw" }.into(),
            drbg_instance_id: label.map(|d| d.instance_id.clone()),
        })
    }

    async fn random_integers(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::IntegersArgs = args::parse(args)?;
        if a.min > a.max {
            return Err(Failure::argument(format!(
                "argument `min` ({}) must be less than or equal to `max` ({})",
                a.min, a.max
            )));
        }
        let count = within("count", a.count, 1, args::MAX_NUMBERS)? as u32;
        let values = self.gateway.integers(a.min, a.max, count).await?;
        json(IntegersResult { min: a.min, max: a.max, values })
    }

    async fn random_floats(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::FloatsArgs = args::parse(args)?;
        let count = within("count", a.count, 1, args::MAX_NUMBERS)? as u32;
        json(FloatsResult { values: self.gateway.floats(count).await? })
    }

    async fn random_uuids(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::UuidsArgs = args::parse(args)?;
        let count = within("count", a.count, 1, args::MAX_UUIDS)? as u32;
        json(UuidsResult { uuids: self.gateway.uuids(count).await? })
    }

    async fn roll_dice(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::DiceArgs = args::parse(args)?;
        let dice = Dice::parse(&a.notation)
            .map_err(|problem| Failure::argument(format!("argument `notation`: {problem}")))?;
        let rolls = self.gateway.integers(1, i64::from(dice.faces), dice.count).await?;
        let total = dice.total(&rolls);
        json(DiceResult { notation: dice.to_string(), rolls, modifier: dice.modifier, total })
    }

    async fn shuffle(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::ShuffleArgs = args::parse(args)?;
        let n = within("items", a.items.len() as i64, 1, args::MAX_ITEMS as i64)
            .map_err(|_| items_error(a.items.len()))?;
        let (indices, drawn) = self.gateway.indices(draw::shuffle_bounds(n as usize)).await?;
        let mut items = a.items;
        draw::shuffle_with(&mut items, &indices);
        json(ShuffleResult { items, entropy_bytes_drawn: drawn })
    }

    async fn sample(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::SampleArgs = args::parse(args)?;
        let n = a.items.len();
        if !(1..=args::MAX_ITEMS).contains(&n) {
            return Err(items_error(n));
        }
        let k = within("k", a.k, 1, n as i64)? as usize;
        let (indices, drawn) = self.gateway.indices(draw::sample_bounds(n, k)).await?;
        json(SampleResult {
            picked: draw::sample_with(a.items, &indices),
            entropy_bytes_drawn: drawn,
        })
    }

    async fn generate_password(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::PasswordArgs = args::parse(args)?;
        let length =
            within("length", a.length, password::MIN_LENGTH as i64, password::MAX_LENGTH as i64)?
                as usize;
        let alphabet = password::alphabet(a.alphabet.as_deref(), a.characters.as_deref())
            .map_err(|e| Failure::argument(e.to_string()))?;
        let (indices, drawn) = self.gateway.indices(vec![alphabet.len() as u64; length]).await?;
        let password: String = indices.iter().map(|&i| alphabet[i as usize]).collect();
        json(PasswordResult {
            password,
            length,
            alphabet_size: alphabet.len(),
            entropy_bits: round2(draw::entropy_bits(alphabet.len(), length)),
            entropy_bytes_drawn: drawn,
        })
    }

    async fn generate_passphrase(&self, args: JsonObject) -> Result<Value, Failure> {
        let a: args::PassphraseArgs = args::parse(args)?;
        let count =
            within("words", a.words, password::MIN_WORDS as i64, password::MAX_WORDS as i64)?
                as usize;
        let separator =
            password::separator(&a.separator).map_err(|e| Failure::argument(e.to_string()))?;
        let list = &self.words;
        let (indices, drawn) = self.gateway.indices(vec![list.len() as u64; count]).await?;
        let words: Vec<String> = indices.iter().map(|&i| list[i as usize].to_owned()).collect();
        json(PassphraseResult {
            passphrase: words.join(separator),
            words,
            word_list_size: list.len(),
            entropy_bits: round2(draw::entropy_bits(list.len(), count)),
            entropy_bytes_drawn: drawn,
        })
    }

    async fn gateway_status(&self, args: JsonObject) -> Result<Value, Failure> {
        let _: args::NoArgs = args::parse(args)?;
        json(StatusReport::from(self.gateway.status().await?))
    }
}

fn items_error(n: usize) -> Failure {
    Failure::argument(format!("argument `items` has {n} items, must have 1..={}", args::MAX_ITEMS))
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn json(result: impl Serialize) -> Result<Value, Failure> {
    serde_json::to_value(result).map_err(|e| Failure {
        kind: "gateway_error",
        message: format!("cannot encode the result: {e}"),
        retry_after_ms: None,
    })
}

/// The tool result for a failure: the message as text for the agent, and the kind (and retry
/// delay) as structured content for programs.
fn failure_result(f: &Failure) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(f.message.clone())]);
    let mut detail = serde_json::json!({"error": f.kind, "message": f.message});
    if let Some(ms) = f.retry_after_ms {
        detail["retry_after_ms"] = ms.into();
    }
    result.structured_content = Some(detail);
    result
}

fn tool<A: JsonSchema + 'static, R: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
) -> Tool {
    Tool::new(name, description, schema_for_type::<A>())
        .with_raw_output_schema(schema_for_output::<R>())
        .with_annotations(
            ToolAnnotations::new().read_only(true).destructive(false).idempotent(false),
        )
}

/// Every tool, with its description and schemas.
fn tool_list() -> Vec<Tool> {
    vec![
        tool::<args::BytesArgs, BytesResult>(
            "random_bytes",
            "Random bytes from the entropy gateway (1..=4096), as hex or base64. They appear in \
             this conversation: fine for nonces in tests, salts for demos or seeds for \
             simulations, not for secret keys.",
        ),
        tool::<args::IntegersArgs, IntegersResult>(
            "random_integers",
            "Uniform random integers in [min, max], both inclusive, over the whole signed 64-bit \
             range, without modulo bias (1..=1000 per call). Independent draws: values may \
             repeat. For dice use roll_dice; for distinct picks use sample.",
        ),
        tool::<args::FloatsArgs, FloatsResult>(
            "random_floats",
            "Uniform random numbers in [0, 1), each with 53 random bits (1..=1000 per call). \
             Scale as min + x * (max - min).",
        ),
        tool::<args::UuidsArgs, UuidsResult>(
            "random_uuids",
            "Random version 4 UUIDs (RFC 9562), lowercase (1..=100 per call).",
        ),
        tool::<args::DiceArgs, DiceResult>(
            "roll_dice",
            "Roll dice in NdM notation (\"3d6\", \"d20\", \"2d8+3\"): returns each die's roll, the \
             modifier and the total. Fair: every face is equally likely.",
        ),
        tool::<args::ShuffleArgs, ShuffleResult>(
            "shuffle",
            "Shuffle a list (1..=1000 items of any JSON type) into a uniformly random order \
             (Fisher-Yates with unbiased draws): every ordering is equally likely.",
        ),
        tool::<args::SampleArgs, SampleResult>(
            "sample",
            "Pick k items from a list without replacement (1..=1000 items, k from 1 to the list's \
             length), uniformly: every subset and order is equally likely. Use it for raffles, \
             random assignment, or choosing test cases.",
        ),
        tool::<args::PasswordArgs, PasswordResult>(
            "generate_password",
            "A random password of `length` characters (4..=256, default 20) from a named \
             alphabet or your own characters; reports its entropy in bits. It appears in this \
             conversation's transcript: use it for test accounts and demos, not for secrets that \
             must stay private.",
        ),
        tool::<args::PassphraseArgs, PassphraseResult>(
            "generate_passphrase",
            "A random passphrase of common English words (1..=32 words, default 6, 11 bits each) \
             joined by a separator; reports its entropy in bits. It appears in this \
             conversation's transcript: not for secrets that must stay private.",
        ),
        tool::<args::NoArgs, StatusReport>(
            "gateway_status",
            "The entropy gateway's state: whether it serves, how full its pool is, its sources \
             with their kind and health, and whether the bytes served now are quantum.",
        ),
    ]
}

impl ServerHandler for EntropyServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("entropy-mcp", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // Dropping the work on cancellation drops the gateway call in flight with it: the
        // gateway sees the call cancelled and draws nothing for it.
        let outcome = tokio::select! {
            outcome = self.run(&name, args) => outcome,
            () = context.ct.cancelled() => {
                tracing::info!(tool = %name, "tool call cancelled by the client");
                return Err(ErrorData::internal_error("cancelled by the client", None));
            }
        };
        let result = match outcome {
            None => {
                return Err(ErrorData::invalid_params(format!("unknown tool {name:?}"), None));
            }
            Some(Ok(value)) => {
                tracing::info!(tool = %name, "tool call served");
                CallToolResult::structured(value)
            }
            Some(Err(failure)) => {
                tracing::info!(tool = %name, error = failure.kind, "tool call failed");
                failure_result(&failure)
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut status = Resource::new(STATUS_URI, "gateway-status");
        status.description = Some(
            "The entropy gateway's status as JSON: pool, sources, and whether the bytes are \
             quantum (the gateway_status tool's result)."
                .into(),
        );
        status.mime_type = Some("application/json".into());
        Ok(ListResourcesResult::with_all_items(vec![status]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != STATUS_URI {
            return Err(ErrorData::resource_not_found(
                format!("no resource {:?}; the only one is {STATUS_URI}", request.uri),
                None,
            ));
        }
        let status =
            self.gateway.status().await.map_err(|f| ErrorData::internal_error(f.message, None))?;
        let text = serde_json::to_string_pretty(&StatusReport::from(status))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut contents = ResourceContents::text(text, STATUS_URI);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut contents {
            *mime_type = Some("application/json".into());
        }
        let mut result = ReadResourceResult::new(vec![contents]);
        result.ttl_ms = Some(0); // live state: never serve it from a cache
        Ok(result.into())
    }
}
