// Errors the client throws: one class per gRPC status the gateway documents, as in the Node
// client, so callers catch what they can act on. A caller's own AbortSignal rejects with the
// signal's reason (an AbortError or TimeoutError DOMException), as fetch does.

import { Code, ConnectError } from "@connectrpc/connect";

/** Canonical gRPC status names, by code. */
const NAMES = [
  "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
  "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
  "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
];

/** Any failed call. `code` is the gRPC status number, `codeName` its canonical name (e.g.
 * "INVALID_ARGUMENT"), `details` the server's message. */
export class EntropyError extends Error {
  readonly code: number;
  readonly codeName: string;
  readonly details: string;

  constructor(code: number, details: string, options?: { cause?: unknown }) {
    const codeName = NAMES[code] ?? String(code);
    super(`${codeName}: ${details}`, options);
    this.name = new.target.name;
    this.code = code;
    this.codeName = codeName;
    this.details = details;
  }

  /** True when the same call may succeed later. */
  get retryable(): boolean {
    return [Code.Unavailable, Code.DeadlineExceeded, Code.ResourceExhausted].includes(this.code);
  }
}

/** INVALID_ARGUMENT: a field is out of range; the message names the field and its bounds. */
export class InvalidArgumentError extends EntropyError {}
/** UNAUTHENTICATED: no API key, or a key the gateway does not know. */
export class UnauthenticatedError extends EntropyError {}
/** PERMISSION_DENIED: the key is valid but lacks the scope this call needs. */
export class PermissionDeniedError extends EntropyError {}
/** RESOURCE_EXHAUSTED: the key's quota is used up; retry after `retryAfterMs` if set. */
export class ResourceExhaustedError extends EntropyError {
  constructor(
    code: number,
    details: string,
    readonly retryAfterMs: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(code, details, options);
  }
}
/** UNAVAILABLE: no entropy in time, shutting down, or unreachable (a browser also reports a
 * request its CORS rules blocked this way). Nothing was consumed: retrying is safe. */
export class UnavailableError extends EntropyError {}
/** DEADLINE_EXCEEDED: the call's own deadline passed first. Nothing was consumed. */
export class DeadlineExceededError extends EntropyError {}
/** FAILED_PRECONDITION: the call accepts only some source kinds (`acceptKinds`) and the pool
 * holds none of them and none arrived lately; the message names what the pool holds. Nothing was
 * consumed. Not transient: the same call fails the same way until a source of an accepted kind
 * feeds the gateway, so a stream does not retry it. */
export class FailedPreconditionError extends EntropyError {}

const byCode = new Map<number, new (code: number, details: string, options?: { cause?: unknown }) => EntropyError>([
  [Code.InvalidArgument, InvalidArgumentError],
  [Code.Unauthenticated, UnauthenticatedError],
  [Code.PermissionDenied, PermissionDeniedError],
  [Code.Unavailable, UnavailableError],
  [Code.DeadlineExceeded, DeadlineExceededError],
  [Code.FailedPrecondition, FailedPreconditionError],
]);

/** The error for what a call threw; the caller's own abort passes through as its reason. */
export function fromCallError(e: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason;
  if (e instanceof EntropyError) return e;
  const ce = ConnectError.from(e);
  // fetch rejects with a TypeError when the network (or CORS) refuses: the server said nothing.
  const code = ce.code === Code.Unknown && !ce.isWireError && ce.cause instanceof TypeError ? Code.Unavailable : ce.code;
  if (code === Code.ResourceExhausted) {
    const raw = ce.metadata.get("retry-after-ms");
    const ms = raw === null ? NaN : Number(raw);
    return new ResourceExhaustedError(code, ce.rawMessage, Number.isInteger(ms) && ms >= 0 ? ms : undefined, { cause: e });
  }
  const Cls = byCode.get(code) ?? EntropyError;
  return new Cls(code, ce.rawMessage, { cause: e });
}

/** A value that cannot even be encoded (a negative count), reported like a server range error. */
export function invalidArgument(details: string): InvalidArgumentError {
  return new InvalidArgumentError(Code.InvalidArgument, details);
}
