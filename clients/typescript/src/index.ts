// Client for Entropy Diode, a gRPC service that hands out quantum random bytes, each byte to one
// caller, once.
//
// Layout: client.ts (promise API), grpc.ts (the grpc-js client made from the generated
// descriptors), stream.ts (StreamRandom as async iterable / Readable, with the reconnect rule),
// endpoint.ts (the endpoint syntax), apikey.ts (key checks), errors.ts (one class per gRPC
// status), status.ts (SourceKind and GetStatus as plain objects), usage.ts (GetUsage as plain
// objects) and provenance.ts (Construction,
// the acceptKinds and construction checks, provenance and quality reports as plain objects), both shared with the
// browser client, gen/ (generated from proto/ by clients/generate.sh with protoc-gen-es, as for
// the browser client).

export { MAX_API_KEY_LENGTH, validateApiKey } from "./apikey.js";
export {
  type CallOptions,
  type ClientOptions,
  DEFAULT_CHANNEL_OPTIONS,
  DEFAULT_ENDPOINT,
  DEFAULT_TIMEOUT_MS,
  type Draw,
  EntropyClient,
  type EnvClientOptions,
} from "./client.js";
export { DEFAULT_PORT, type Endpoint, formatEndpoint, isLoopback, parseEndpoint } from "./endpoint.js";
export {
  DeadlineExceededError,
  EntropyError,
  FailedPreconditionError,
  InvalidArgumentError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
} from "./errors.js";
export {
  type ChunkRef,
  Construction,
  type DrbgLabel,
  type Fips1402,
  type MonteCarloPi,
  type Provenance,
  type QualityReport,
} from "./provenance.js";
export { type ClassLevel, type Source, SourceKind, sourceKindName, type Status } from "./status.js";
export {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_INITIAL_BACKOFF_MS,
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_RECONNECT_BUDGET_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  RandomStream,
  type StreamOptions,
} from "./stream.js";
export { type HeldUsage, type RateUsage, type Usage } from "./usage.js";
