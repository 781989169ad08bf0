// The example page in headless Chromium (Debian's `chromium`, driven by playwright-core) against
// a live dev gateway with gRPC-Web on for the page's origin: dice, UUIDs and the pool watched,
// errors shown with the server's message, and a page from another origin refused by CORS.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, before, test } from "node:test";

import { type BrowserContext, type Page, chromium } from "playwright-core";

import { Gateway, PACKAGE_DIR, POOL_CAPACITY, servePage } from "./support.js";

const CHROMIUM = process.env.CHROMIUM_BIN ?? "/usr/bin/chromium";
const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let gw: Gateway;
let site: Awaited<ReturnType<typeof servePage>>;
let profile: string;
let browser: BrowserContext;
let page: Page;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium, or set CHROMIUM_BIN`);
  site = await servePage();
  // The page is served from http://127.0.0.1:PORT; only that origin may call the gateway.
  gw = await Gateway.start([`http://127.0.0.1:${site.port}`]);
  profile = await mkdtemp(path.join(tmpdir(), "entropy-chromium-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 900, height: 1100 },
  });
  page = browser.pages()[0] ?? (await browser.newPage());
});

after(async () => {
  await browser?.close();
  await gw?.stop();
  await site?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

async function open(p: Page, host: string, key: string): Promise<void> {
  await p.goto(`http://${host}:${site.port}/?endpoint=${encodeURIComponent(gw.endpoint)}`);
  await p.fill("#key", key);
}

test("the page draws dice and UUIDs and watches the pool", async () => {
  await open(page, "127.0.0.1", gw.apiKey);

  await page.click("#roll");
  await page.waitForFunction(() => document.getElementById("dice")?.dataset.values !== "");
  const dice = (await page.getAttribute("#dice", "data-values"))!.split(",").map(Number);
  assert.equal(dice.length, 10);
  assert.ok(dice.every((d) => Number.isInteger(d) && d >= 1 && d <= 6), String(dice));
  assert.equal(await page.textContent("#error"), "");

  await page.click("#draw-uuids");
  await page.waitForSelector("#uuids li");
  const uuids = await page.$$eval("#uuids li", (items) => items.map((li) => li.textContent ?? ""));
  assert.equal(uuids.length, 5);
  assert.equal(new Set(uuids).size, 5);
  for (const u of uuids) assert.match(u, UUID4);

  await page.click("#watch");
  await page.waitForFunction(() => Number(document.getElementById("updates")?.textContent) >= 2);
  const pool = page.locator("#pool");
  assert.equal(await pool.getAttribute("data-capacity"), String(POOL_CAPACITY));
  assert.equal(await pool.getAttribute("data-serving"), "true");
  const kinds = await page.$$eval("#sources li", (items) => items.map((li) => li.dataset.kind));
  assert.ok(kinds.length > 0 && kinds.every((k) => k === "os"), String(kinds));
  // Watching follows the pool: what the dice drew shows up in the served counter.
  const served = BigInt((await pool.getAttribute("data-served"))!);
  await page.click("#roll");
  await page.waitForFunction(
    (before) => BigInt(document.getElementById("pool")?.dataset.served ?? "0") > BigInt(before),
    String(served),
  );
  await page.screenshot({ path: path.join(PACKAGE_DIR, "dist/test/page.png"), fullPage: true });
  await page.click("#watch"); // stop polling
});

test("a wrong key shows UNAUTHENTICATED with the server's message, and never the key", async () => {
  const p = await browser.newPage();
  const wrong = `wrong-${gw.apiKey}`;
  await open(p, "127.0.0.1", wrong);
  await p.click("#roll");
  await p.waitForFunction(() => document.getElementById("error")?.textContent !== "");
  assert.equal(await p.getAttribute("#error", "data-code"), "UNAUTHENTICATED");
  const text = (await p.textContent("#error")) ?? "";
  assert.match(text, /API key/);
  assert.ok(!text.includes(wrong), text);
  await p.close();
});

test("a page from an origin not in grpc_web_allowed_origins is refused", async () => {
  // Same page, same gateway, but served as http://localhost:PORT: another origin.
  const p = await browser.newPage();
  await open(p, "localhost", gw.apiKey);
  await p.click("#roll");
  await p.waitForFunction(() => document.getElementById("error")?.textContent !== "");
  assert.equal(await p.getAttribute("#error", "data-code"), "UNAVAILABLE");
  assert.equal(await p.getAttribute("#dice", "data-values"), "", "no dice drawn");
  await p.close();
});
