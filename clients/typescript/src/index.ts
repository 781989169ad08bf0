// Client for Entropy Diode, a gRPC service that hands out quantum random bytes, each byte to one
// caller, once.
//
// Layout: client.ts (promise API), stream.ts (StreamRandom as async iterable / Readable, with
// reconnect), errors.ts (one class per gRPC status), status.ts (GetStatus as plain objects),
// gen/ (generated from proto/ by clients/generate.sh).

export { type CallOptions, type ClientOptions, DEFAULT_TIMEOUT_MS, EntropyClient } from "./client";
export {
  DeadlineExceededError,
  EntropyError,
  InvalidArgumentError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
} from "./errors";
export type { Source, Status } from "./status";
export { MAX_RECONNECTS, RandomStream, type StreamOptions } from "./stream";
