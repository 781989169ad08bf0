// GetUsage as plain objects: the calling key's limits and what is left of each. A limit the key
// does not have is `null` (the wire's `unlimited: true`); counts and durations are bigint
// (uint64 on the wire), durations whole milliseconds rounded up.

import type { GetUsageResponse, HeldUsage as HeldUsagePb, RateUsage as RateUsagePb } from "./gen/entropy/v1/entropy_pb.js";

/** One rate limit: a token bucket holding at most `burst` units, refilled `perSecond` a second,
 * evenly. */
export interface RateUsage {
  perSecond: bigint;
  /** The most units the bucket holds: the most one call can take at once. */
  burst: bigint;
  /** Units that could be taken now. */
  remaining: bigint;
  /** Until one more unit is there; 0 when full. */
  nextRefillMs: bigint;
  /** Until the bucket is full again if nothing more is taken; 0 when full. */
  fullInMs: bigint;
}

/** A limit on what the key holds at once (streams open, bytes drawn and not yet read): units
 * come back when the key lets them go, not over time. `limit` and `remaining` are null when the
 * key has no such limit. */
export interface HeldUsage {
  limit: bigint | null;
  inUse: bigint;
  remaining: bigint | null;
}

/** The calling key's limits and what is left of each (GetUsage). */
export interface Usage {
  keyName: string;
  /** `requests_per_second`: each unary call and stream opened takes one (GetUsage none). */
  requests: RateUsage | null;
  /** `bytes_per_second`: pool bytes. */
  bytes: RateUsage | null;
  /** `drbg_bytes_per_second`: DRBG output. */
  drbgBytes: RateUsage | null;
  /** `max_streams`. */
  streams: HeldUsage;
  /** `max_undelivered_bytes` (never unlimited). */
  undeliveredBytes: HeldUsage;
}

function rate(r: RateUsagePb | undefined): RateUsage | null {
  if (r === undefined || r.unlimited) return null;
  return { perSecond: r.perSecond, burst: r.burst, remaining: r.remaining, nextRefillMs: r.nextRefillMs, fullInMs: r.fullInMs };
}

function held(h: HeldUsagePb | undefined): HeldUsage {
  if (h === undefined || h.unlimited) return { limit: null, inUse: h?.inUse ?? 0n, remaining: null };
  return { limit: h.limit, inUse: h.inUse, remaining: h.remaining };
}

export function usageFromPb(msg: GetUsageResponse): Usage {
  return {
    keyName: msg.keyName,
    requests: rate(msg.requests),
    bytes: rate(msg.bytes),
    drbgBytes: rate(msg.drbgBytes),
    streams: held(msg.streams),
    undeliveredBytes: held(msg.undeliveredBytes),
  };
}
