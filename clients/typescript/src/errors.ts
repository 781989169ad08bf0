// Errors the client throws: one class per gRPC status the gateway documents, so callers catch
// what they can act on (UnavailableError: retry; InvalidArgumentError: fix the call) instead of
// comparing numeric codes.

import { Metadata, type ServiceError, status } from "@grpc/grpc-js";

/** Any failed call. `code` is the gRPC status, `details` the server's message. */
export class EntropyError extends Error {
  readonly code: status;
  readonly details: string;

  constructor(code: status, details: string) {
    super(`${status[code] ?? code}: ${details}`);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
  }
}

/** INVALID_ARGUMENT: a field is out of range; the message names the field and its bounds. */
export class InvalidArgumentError extends EntropyError {}

/** UNAUTHENTICATED: no API key, or a key the gateway does not know. */
export class UnauthenticatedError extends EntropyError {}

/** PERMISSION_DENIED: the key is valid but lacks the scope this call needs. */
export class PermissionDeniedError extends EntropyError {}

/** RESOURCE_EXHAUSTED: the key's quota is used up. `retryAfterMs` is the server's
 * `retry-after-ms` trailer, or undefined when it sent none. */
export class ResourceExhaustedError extends EntropyError {
  constructor(
    code: status,
    details: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(code, details);
  }
}

/** UNAVAILABLE: not enough entropy within the server's maximum wait, the server is shutting
 * down, or it cannot be reached. Nothing was consumed: retrying is safe. */
export class UnavailableError extends EntropyError {}

/** DEADLINE_EXCEEDED: the call's own deadline passed first. Nothing was consumed. */
export class DeadlineExceededError extends EntropyError {}

/** FAILED_PRECONDITION: the call accepts only some source kinds (`acceptKinds`) and the pool
 * holds none of them and none arrived lately; the message names what the pool holds. Nothing was
 * consumed. Not transient: the same call fails the same way until a source of an accepted kind
 * feeds the gateway, so a stream does not retry it. */
export class FailedPreconditionError extends EntropyError {}

const byCode = new Map<status, new (code: status, details: string) => EntropyError>([
  [status.INVALID_ARGUMENT, InvalidArgumentError],
  [status.UNAUTHENTICATED, UnauthenticatedError],
  [status.PERMISSION_DENIED, PermissionDeniedError],
  [status.UNAVAILABLE, UnavailableError],
  [status.DEADLINE_EXCEEDED, DeadlineExceededError],
  [status.FAILED_PRECONDITION, FailedPreconditionError],
]);

/** The error class for a status (EntropyError itself for codes without one). */
export function fromStatus(code: status, details: string, trailers?: Metadata): EntropyError {
  if (code === status.RESOURCE_EXHAUSTED) {
    return new ResourceExhaustedError(code, details, retryAfterMs(trailers));
  }
  const Cls = byCode.get(code) ?? EntropyError;
  return new Cls(code, details);
}

/** Translate what grpc-js reports for a failed call. */
export function fromServiceError(err: ServiceError | Error): EntropyError {
  if (err instanceof EntropyError) return err;
  const e = err as Partial<ServiceError>;
  if (typeof e.code !== "number") return new EntropyError(status.UNKNOWN, err.message);
  return fromStatus(e.code, e.details ?? err.message, e.metadata);
}

/** A request value that cannot even be encoded (a negative count), reported like the server's
 * own range errors. */
export function invalidArgument(details: string): InvalidArgumentError {
  return new InvalidArgumentError(status.INVALID_ARGUMENT, details);
}

function retryAfterMs(trailers: Metadata | undefined): number | undefined {
  const value = trailers?.get("retry-after-ms")[0];
  const ms = typeof value === "string" ? Number(value) : NaN;
  return Number.isInteger(ms) && ms >= 0 ? ms : undefined;
}
