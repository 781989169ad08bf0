// The endpoint syntax, API-key checks and the from-environment constructor (clients/README.md,
// "What every client does the same way"). No gateway needed.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, describe, test } from "node:test";
import { inspect } from "node:util";

import {
  EntropyClient,
  InvalidArgumentError,
  isLoopback,
  MAX_API_KEY_LENGTH,
  parseEndpoint,
  validateApiKey,
} from "../src";

const tmp = mkdtempSync(path.join(tmpdir(), "entropy-config-"));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** Asserts `f` throws an InvalidArgumentError whose message matches `pattern`. */
function throwsInvalid(f: () => unknown, pattern: RegExp): InvalidArgumentError {
  let caught: unknown;
  try {
    f();
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof InvalidArgumentError, `expected InvalidArgumentError, got ${String(caught)}`);
  assert.match(caught.message, pattern);
  return caught;
}

describe("endpoint syntax", () => {
  const ok: Array<[string, boolean, { host: string; port: number; tls: boolean }]> = [
    // host[:port]: TLS unless loopback without a CA file
    ["127.0.0.1:50051", false, { host: "127.0.0.1", port: 50051, tls: false }],
    ["127.0.0.1", false, { host: "127.0.0.1", port: 50051, tls: false }],
    ["127.8.9.10:7", false, { host: "127.8.9.10", port: 7, tls: false }],
    ["localhost:1234", false, { host: "localhost", port: 1234, tls: false }],
    ["LocalHost", false, { host: "LocalHost", port: 50051, tls: false }],
    ["[::1]:50052", false, { host: "::1", port: 50052, tls: false }],
    ["[::1]", false, { host: "::1", port: 50051, tls: false }],
    ["localhost:1234", true, { host: "localhost", port: 1234, tls: true }],
    ["entropy.example.com:443", false, { host: "entropy.example.com", port: 443, tls: true }],
    ["entropy.example.com", false, { host: "entropy.example.com", port: 50051, tls: true }],
    ["10.0.0.7:50051", false, { host: "10.0.0.7", port: 50051, tls: true }],
    ["128.0.0.1:50051", false, { host: "128.0.0.1", port: 50051, tls: true }],
    ["[2001:db8::7]:65535", false, { host: "2001:db8::7", port: 65535, tls: true }],
    ["gw_1.internal:1", false, { host: "gw_1.internal", port: 1, tls: true }],
    // http:// and https:// say it themselves, with one optional trailing /
    ["http://gw.example.com:8080", false, { host: "gw.example.com", port: 8080, tls: false }],
    ["http://gw.example.com/", false, { host: "gw.example.com", port: 50051, tls: false }],
    ["https://127.0.0.1:50051/", false, { host: "127.0.0.1", port: 50051, tls: true }],
    ["https://gw.example.com", true, { host: "gw.example.com", port: 50051, tls: true }],
    ["https://[::1]:9/", false, { host: "::1", port: 9, tls: true }],
    ["http://[fe80::1]", false, { host: "fe80::1", port: 50051, tls: false }],
  ];
  for (const [text, ca, want] of ok) {
    test(`${JSON.stringify(text)}${ca ? " with a CA file" : ""}`, () => {
      assert.deepEqual(parseEndpoint(text, ca), want);
    });
  }

  const bad: Array<[string, boolean, RegExp]> = [
    ["h:x", false, /^INVALID_ARGUMENT: endpoint "h:x": the port must be a number 1\.\.=65535$/],
    ["h:0", false, /the port must be a number 1\.\.=65535/],
    ["h:65536", false, /the port must be a number/],
    ["h:", false, /the port must be a number/],
    ["h:-1", false, /the port must be a number/],
    ["h:123456", false, /the port must be a number/],
    ["", false, /^INVALID_ARGUMENT: endpoint "": no host/],
    [":50051", false, /no host/],
    ["http://", false, /no host/],
    ["grpc://h:1", false, /the scheme must be http:\/\/ or https:\/\//],
    ["HTTPS://h:1", false, /the scheme must be/],
    ["http://h:1", true, /http:\/\/ is plaintext, but a CA file was given: use https:\/\//],
    ["https://h:1/v1", false, /nothing may follow host:port but one \//],
    ["h:1//", false, /nothing may follow/],
    ["::1", false, /an IPv6 address goes in brackets/],
    ["[::1", false, /needs its closing \]/],
    ["[::1]x", false, /only :port may follow the \]/],
    ["[]:1", false, /not an IPv6 address in brackets/],
    ["[host]:1", false, /not an IPv6 address in brackets/],
    ["[::1]:abc", false, /the port must be a number/],
    ["user@h:1", false, /the host may hold only/],
    ["h h:1", false, /the host may hold only/],
    [" h:1", false, /the host may hold only/],
  ];
  for (const [text, ca, pattern] of bad) {
    test(`${JSON.stringify(text)}${ca ? " with a CA file" : ""} is refused, quoted`, () => {
      const e = throwsInvalid(() => parseEndpoint(text, ca), pattern);
      assert.ok(e.message.includes(JSON.stringify(text)), e.message);
    });
  }

  test("loopback is localhost, 127.0.0.0/8 and ::1 only", () => {
    for (const h of ["localhost", "LOCALHOST", "127.0.0.1", "127.255.255.254", "::1"]) assert.ok(isLoopback(h), h);
    for (const h of ["127.0.0.256", "127.0.0", "128.0.0.1", "0.0.0.0", "localhost.example.com", "::2", "::"]) {
      assert.ok(!isLoopback(h), h);
    }
  });

  test("the constructor uses it, and says where it connects", () => {
    const cases: Array<[string, string]> = [
      ["127.0.0.1:9", "http://127.0.0.1:9"],
      ["[::1]", "http://[::1]:50051"],
      ["gw.example.com", "https://gw.example.com:50051"],
      ["http://gw.example.com:80/", "http://gw.example.com:80"],
    ];
    for (const [text, want] of cases) {
      const c = new EntropyClient(text, "k");
      assert.equal(c.endpoint, want);
      c.close();
    }
    const forced = new EntropyClient("gw.example.com", "k", { insecure: true });
    assert.equal(forced.endpoint, "http://gw.example.com:50051");
    forced.close();
    throwsInvalid(() => new EntropyClient("h:x", "k"), /endpoint "h:x": the port must be/);
  });
});

describe("API keys", () => {
  const SECRET = "Sup3r-Secret_Key.value";

  test("1 to 512 visible ASCII characters pass", () => {
    for (const key of ["k", "!", "~", SECRET, "x".repeat(MAX_API_KEY_LENGTH), "ed_live_0123456789abcdef"]) {
      assert.equal(validateApiKey(key), key);
    }
    let all = "";
    for (let c = 0x21; c <= 0x7e; c++) all += String.fromCharCode(c);
    assert.equal(validateApiKey(all), all);
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ["missing (empty)", "", /API key is missing: pass one, or set ENTROPY_API_KEY/],
    ["missing (undefined)", undefined, /API key is missing/],
    ["too long", SECRET + "x".repeat(MAX_API_KEY_LENGTH), /API key is 534 characters long, at most 512/],
    ["a trailing newline", `${SECRET}\n`, /a line break at position 22 \(counting from 0\) \(the last one: check for a trailing newline\)/],
    ["a trailing CR LF", `${SECRET}\r\n`, /a line break at position 22 /],
    ["a space inside", `Sup3r ${SECRET}`, /a space at position 5 .*visible ASCII characters \(0x21\.\.0x7e\)/],
    ["a leading space", ` ${SECRET}`, /a space at position 0 /],
    ["a tab", `${SECRET}\tx`, /a tab at position 22/],
    ["a control character", `${SECRET}\u0000`, /a control character at position 22/],
    ["DEL", `${SECRET}\u007f`, /a control character at position 22/],
    ["non-ASCII", `${SECRET}é`, /a non-ASCII character at position 22/],
    ["not a string", 12345, /API key must be a string, not number/],
  ];
  for (const [what, key, pattern] of bad) {
    test(`${what} is refused at construction, without the key in the error`, () => {
      for (const make of [
        () => validateApiKey(key),
        () => new EntropyClient("127.0.0.1:9", key as string),
        () => EntropyClient.fromEnv({}, { ENTROPY_API_KEY: key as string, ENTROPY_ENDPOINT: "127.0.0.1:9" }),
      ]) {
        const e = throwsInvalid(make, pattern);
        // Neither the key nor any long piece of it anywhere in the error as printed.
        const printed = [e.message, e.details, e.stack ?? "", inspect(e), JSON.stringify(e), String(e)].join("\n");
        assert.ok(!printed.includes(SECRET), printed);
        assert.ok(!printed.includes("Secret"), printed);
        assert.ok(!printed.includes("12345"), printed);
      }
    });
  }
});

describe("from the environment", () => {
  const caFile = path.join(tmp, "ca.pem");
  // Not a real CA: grpc-js only reads it when it connects, and these clients never do.
  writeFileSync(caFile, "-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n");

  test("ENTROPY_ENDPOINT, ENTROPY_API_KEY, and the default endpoint", () => {
    const c = EntropyClient.fromEnv({}, { ENTROPY_ENDPOINT: "[::1]:7", ENTROPY_API_KEY: "k" });
    assert.equal(c.endpoint, "http://[::1]:7");
    c.close();
    const d = EntropyClient.fromEnv({}, { ENTROPY_API_KEY: "k" });
    assert.equal(d.endpoint, "http://127.0.0.1:50051");
    d.close();
    const e = EntropyClient.fromEnv({}, { ENTROPY_API_KEY: "k", ENTROPY_ENDPOINT: "" });
    assert.equal(e.endpoint, "http://127.0.0.1:50051"); // empty is unset
    e.close();
  });

  test("a missing key is refused", () => {
    throwsInvalid(() => EntropyClient.fromEnv({}, {}), /API key is missing/);
  });

  test("arguments win over the environment", () => {
    const env = { ENTROPY_ENDPOINT: "h:x", ENTROPY_API_KEY: "bad key", ENTROPY_CA_FILE: path.join(tmp, "nope.pem") };
    const c = EntropyClient.fromEnv({ endpoint: "127.0.0.1:9", apiKey: "k", caFile: caFile }, env);
    assert.equal(c.endpoint, "https://127.0.0.1:9");
    c.close();
  });

  test("ENTROPY_CA_FILE makes loopback TLS, refuses http://, and must be readable", () => {
    const c = EntropyClient.fromEnv({}, { ENTROPY_API_KEY: "k", ENTROPY_CA_FILE: caFile });
    assert.equal(c.endpoint, "https://127.0.0.1:50051");
    c.close();
    throwsInvalid(
      () => EntropyClient.fromEnv({}, { ENTROPY_API_KEY: "k", ENTROPY_CA_FILE: caFile, ENTROPY_ENDPOINT: "http://h" }),
      /endpoint "http:\/\/h": http:\/\/ is plaintext, but a CA file was given/,
    );
    const missing = path.join(tmp, "missing.pem");
    throwsInvalid(
      () => EntropyClient.fromEnv({}, { ENTROPY_API_KEY: "k", ENTROPY_CA_FILE: missing }),
      /CA file ".*missing\.pem": cannot read it \(ENOENT\)/,
    );
    throwsInvalid(() => new EntropyClient("h", "k", { caFile, insecure: true }), /contradict/);
  });
});
