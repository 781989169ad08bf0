// The gateway's Connect protocol through the official Connect client for TypeScript
// (@connectrpc/connect, with connect-web's Connect transport, which runs on Node's fetch as on a
// browser's), over the protoc-gen-es descriptors of src/gen: JSON and binary, a unary draw, a
// stream, and the gateway's errors as ConnectErrors with its codes and messages. The test
// gateway runs with Connect on (support.ts).

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";

import { EntropyService } from "../src/gen/entropy/v1/entropy_pb.js";
import { Gateway } from "./support.js";

let gw: Gateway;

before(async () => {
  gw = await Gateway.start([]);
});
after(async () => {
  await gw.stop();
});

/** Whether `error` is a ConnectError with `code` whose message names `word`. */
function connectError(code: Code, word: string) {
  return (error: unknown) => {
    const e = ConnectError.from(error);
    assert.equal(e.code, code, e.rawMessage);
    assert.ok(e.rawMessage.includes(word), e.rawMessage);
    return true;
  };
}

for (const useBinaryFormat of [false, true]) {
  test(`the Connect client draws, streams and gets the gateway's errors (${useBinaryFormat ? "binary" : "JSON"})`, async () => {
    const client = createClient(EntropyService, createConnectTransport({ baseUrl: gw.endpoint, useBinaryFormat }));
    const headers = { authorization: `Bearer ${gw.apiKey}` };

    const reply = await client.getRandom({ numBytes: 32 }, { headers });
    assert.equal(reply.data.length, 32);
    assert.ok(reply.provenance, "the provenance travels too");
    const dice = await client.getIntegers({ min: 1n, max: 6n, count: 100 }, { headers });
    assert.ok(dice.values.length === 100 && dice.values.every((v) => v >= 1n && v <= 6n));

    let total = 0;
    for await (const message of client.streamRandom({ chunkBytes: 16384, totalBytes: 100_000n }, { headers })) {
      total += message.data.length;
    }
    assert.equal(total, 100_000);

    await assert.rejects(client.getRandom({ numBytes: 0 }, { headers }), connectError(Code.InvalidArgument, "num_bytes"));
    await assert.rejects(client.getRandom({ numBytes: 8 }), connectError(Code.Unauthenticated, "missing API key"));
    await assert.rejects(
      client.getRandom({ numBytes: 8 }, { headers: { authorization: "Bearer wrong" } }),
      connectError(Code.Unauthenticated, "invalid API key"),
    );
    await assert.rejects(async () => {
      for await (const _ of client.streamRandom({ chunkBytes: 2 ** 20 + 1, totalBytes: 1n }, { headers })) {
        // the error ends the stream
      }
    }, connectError(Code.InvalidArgument, "chunk_bytes"));
  });
}
