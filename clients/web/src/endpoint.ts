// The endpoint syntax every Entropy Diode client accepts, as a base URL for fetch.

/** The gateway's default public port. */
export const DEFAULT_PORT = 50051;

/**
 * `host:port`, `host`, `http://host:port` or `https://host:port` (IPv6 in brackets) as the base
 * URL of gRPC-Web requests. The port defaults to 50051. `https://` means TLS; the others are
 * plaintext (a browser has no CA-file option: it trusts what the system trusts).
 */
export function baseUrl(endpoint: string): string {
  const bad = (why: string) => new TypeError(`endpoint ${JSON.stringify(endpoint)}: ${why}`);
  let rest = endpoint;
  let scheme = "http";
  const sep = endpoint.indexOf("://");
  if (sep >= 0) {
    scheme = endpoint.slice(0, sep);
    if (scheme !== "http" && scheme !== "https") throw bad("the scheme must be http:// or https:// (or none)");
    rest = endpoint.slice(sep + 3);
  }
  if (rest.endsWith("/")) rest = rest.slice(0, -1);
  if (rest.includes("/")) throw bad("no path may follow host:port");
  let host: string;
  let port: string | undefined;
  if (rest.startsWith("[")) {
    const close = rest.indexOf("]");
    if (close < 0) throw bad("an IPv6 address needs its closing ]");
    host = rest.slice(0, close + 1);
    const after = rest.slice(close + 1);
    if (after !== "" && !after.startsWith(":")) throw bad("only :port may follow the host");
    port = after === "" ? undefined : after.slice(1);
    if (!/^\[[0-9a-fA-F:.]+\]$/.test(host)) throw bad("not an IPv6 address in brackets");
  } else {
    const colon = rest.lastIndexOf(":");
    host = colon < 0 ? rest : rest.slice(0, colon);
    port = colon < 0 ? undefined : rest.slice(colon + 1);
    if (host === "") throw bad("no host (expected host:port, http://host:port or https://host:port)");
    if (!/^[A-Za-z0-9._-]+$/.test(host)) throw bad("the host may hold only letters, digits, '.', '-' and '_'");
  }
  let number = DEFAULT_PORT;
  if (port !== undefined) {
    number = /^[0-9]{1,5}$/.test(port) ? Number(port) : 0;
    if (number < 1 || number > 65535) throw bad("the port must be a number 1..=65535");
  }
  return `${scheme}://${host}:${number}`;
}
