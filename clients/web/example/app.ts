// The example page's script: draws dice and UUIDs and watches the pool with the browser client.
// Bundled by esbuild into dist/example/app.js (npm run build).

import { EntropyClient, EntropyError, type Status } from "../src/index.js";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const FACES = ["\u2680", "\u2681", "\u2682", "\u2683", "\u2684", "\u2685"];

const endpoint = $<HTMLInputElement>("endpoint");
endpoint.value = new URLSearchParams(location.search).get("endpoint") ?? "http://127.0.0.1:50051";

let cached: { endpoint: string; key: string; client: EntropyClient } | undefined;
function client(): EntropyClient {
  const key = $<HTMLInputElement>("key").value;
  if (cached?.endpoint !== endpoint.value || cached.key !== key) {
    cached = { endpoint: endpoint.value, key, client: new EntropyClient(endpoint.value, key, { timeoutMs: 10_000 }) };
  }
  return cached.client;
}

/** Runs `action`, showing its error (with the gRPC status and the server's message) if any. */
async function run(action: () => Promise<void>): Promise<void> {
  const error = $("error");
  try {
    await action();
    error.textContent = "";
    error.dataset.code = "";
  } catch (e) {
    // EntropyError: "UNAUTHENTICATED: invalid API key"; a bad key or endpoint: the TypeError's
    // message (which never contains the key).
    error.textContent = e instanceof Error ? e.message : String(e);
    error.dataset.code = e instanceof EntropyError ? e.codeName : "CLIENT";
  }
}

$("roll").addEventListener("click", () =>
  run(async () => {
    const dice = await client().getIntegers(1, 6, 10);
    const el = $("dice");
    el.textContent = dice.map((d) => FACES[d - 1]).join(" ");
    el.title = dice.join(" ");
    el.dataset.values = dice.join(",");
  }),
);

$("draw-uuids").addEventListener("click", () =>
  run(async () => {
    const list = $("uuids");
    list.replaceChildren(
      ...(await client().getUuids(5)).map((u) => {
        const li = document.createElement("li");
        li.textContent = u;
        return li;
      }),
    );
  }),
);

const MIB = 1024 * 1024;
function showStatus(s: Status): void {
  const bar = $<HTMLProgressElement>("pool-bar");
  bar.max = Number(s.poolCapacityBytes);
  bar.value = Number(s.poolBytes);
  const pool = $("pool");
  pool.textContent =
    `${(Number(s.poolBytes) / MIB).toFixed(1)} MiB of ${(Number(s.poolCapacityBytes) / MIB).toFixed(1)} MiB` +
    ` · served ${s.servedBytesTotal} bytes · ${s.serving ? "serving" : `not serving: ${s.notServingReason}`}`;
  pool.dataset.capacity = String(s.poolCapacityBytes);
  pool.dataset.served = String(s.servedBytesTotal);
  pool.dataset.serving = String(s.serving);
  $("sources").replaceChildren(
    ...s.sources.map((src) => {
      const li = document.createElement("li");
      li.textContent = `${src.collectorId}/${src.name}: ${src.kind}, ${src.health}`;
      li.dataset.kind = src.kind;
      return li;
    }),
  );
  const updates = $("updates");
  updates.textContent = String(Number(updates.textContent) + 1);
}

let watching: ReturnType<typeof setInterval> | undefined;
$("watch").addEventListener("click", () => {
  const button = $("watch");
  if (watching !== undefined) {
    clearInterval(watching);
    watching = undefined;
    button.setAttribute("aria-pressed", "false");
    button.textContent = "Watch the pool";
    return;
  }
  const poll = () => run(async () => showStatus(await client().status()));
  void poll();
  watching = setInterval(poll, 1000);
  button.setAttribute("aria-pressed", "true");
  button.textContent = "Stop watching";
});
