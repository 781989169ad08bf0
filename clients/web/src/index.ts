// @entropy-diode/web: the Entropy Diode client for web pages, over gRPC-Web.

export { EntropyClient, DEFAULT_TIMEOUT_MS, type ClientOptions, type CallOptions, type Draw } from "./client.js";
export { baseUrl, DEFAULT_PORT } from "./endpoint.js";
export {
  EntropyError,
  InvalidArgumentError,
  UnauthenticatedError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnavailableError,
  DeadlineExceededError,
  FailedPreconditionError,
} from "./errors.js";
export { validateKey, MAX_KEY_BYTES } from "./key.js";
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
export { RandomStream, type StreamOptions } from "./stream.js";
