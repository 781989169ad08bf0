// The endpoint syntax every Entropy Diode client accepts (clients/README.md, "Endpoint syntax"),
// parsed by one function.

import { invalidArgument } from "./errors.js";

/** The gateway's default public port. */
export const DEFAULT_PORT = 50051;

/** Where a gateway listens and whether the connection uses TLS. */
export interface Endpoint {
  /** Host name or IP address (an IPv6 address without its brackets). */
  host: string;
  port: number;
  tls: boolean;
}

/**
 * Parses an endpoint as written in `ENTROPY_ENDPOINT`:
 *
 * - `https://host[:port][/]`: TLS;
 * - `http://host[:port][/]`: plaintext (refused when `haveCaFile`);
 * - `host[:port]`: TLS, unless the host is loopback (`localhost`, 127.0.0.0/8, `::1`) and no CA
 *   file is given: a key never crosses the network in the clear by default, and
 *   `entropy-gateway --dev` works with no scheme.
 *
 * The port defaults to 50051; an IPv6 address goes in brackets (`[::1]:50051`). Throws an
 * InvalidArgumentError that quotes the endpoint and says what is wrong with it.
 */
export function parseEndpoint(text: string, haveCaFile = false): Endpoint {
  if (typeof text !== "string") throw invalidArgument(`endpoint must be a string, not ${typeof text}`);
  const bad = (why: string) => invalidArgument(`endpoint ${JSON.stringify(text)}: ${why}`);
  let rest = text;
  let tls: boolean | undefined; // from the scheme, else from the host below
  const scheme = text.indexOf("://");
  if (scheme >= 0) {
    const name = text.slice(0, scheme);
    rest = text.slice(scheme + 3);
    if (name === "https") {
      tls = true;
    } else if (name === "http") {
      if (haveCaFile) throw bad("http:// is plaintext, but a CA file was given: use https://");
      tls = false;
    } else {
      throw bad("the scheme must be http:// or https:// (or none)");
    }
  }
  if (rest.endsWith("/")) rest = rest.slice(0, -1);
  if (rest.includes("/")) throw bad("nothing may follow host:port but one /");
  let host: string;
  let port: string | undefined;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) throw bad("an IPv6 address needs its closing ]");
    host = rest.slice(1, close);
    const after = rest.slice(close + 1);
    if (after !== "") {
      if (!after.startsWith(":")) throw bad("only :port may follow the ]");
      port = after.slice(1);
    }
    if (!/^[0-9A-Fa-f:.]+$/.test(host) || !host.includes(":")) throw bad("not an IPv6 address in brackets");
  } else {
    const colon = rest.lastIndexOf(":");
    host = colon < 0 ? rest : rest.slice(0, colon);
    port = colon < 0 ? undefined : rest.slice(colon + 1);
    if (host === "") throw bad("no host (expected host:port, http://host:port or https://host:port)");
    if (host.includes(":")) throw bad("an IPv6 address goes in brackets: [::1]:50051");
    if (!/^[A-Za-z0-9._-]+$/.test(host)) {
      throw bad("the host may hold only letters, digits, '.', '-' and '_' (no spaces, no user@)");
    }
  }
  let number = DEFAULT_PORT;
  if (port !== undefined) {
    number = /^[0-9]{1,5}$/.test(port) ? Number(port) : NaN;
    if (!(number >= 1 && number <= 65535)) throw bad("the port must be a number 1..=65535");
  }
  return { host, port: number, tls: tls ?? (haveCaFile || !isLoopback(host)) };
}

/** `localhost`, an IPv4 address in 127.0.0.0/8, or `::1`. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const parts = h.split(".");
  return (
    parts.length === 4 &&
    parts[0] === "127" &&
    parts.every((p) => /^[0-9]{1,3}$/.test(p) && Number(p) <= 255)
  );
}

/** `host:port` as grpc-js takes it (an IPv6 host in brackets). */
export function grpcTarget(e: Endpoint): string {
  return `${e.host.includes(":") ? `[${e.host}]` : e.host}:${e.port}`;
}

/** `http://host:port` or `https://host:port`. */
export function formatEndpoint(e: Endpoint): string {
  return `${e.tls ? "https" : "http"}://${grpcTarget(e)}`;
}
