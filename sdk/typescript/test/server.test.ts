// Every operation of the client against a real aivis serve: AIVIS_URL,
// AIVIS_KEY and AIVIS_SECRET name it and an account's key
// (NODE_EXTRA_CA_CERTS its certificate). sdk_test.go starts it, with
// outbound deliveries allowed to plain HTTP on loopback, and runs these.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { AivisError, createAivis, OPERATIONS, verifyWebhook, type Client, type Item } from "../src/index.js";

const env = (name: string): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests with go test ./sdk/typescript/`);
  return v;
};

/** A receiver of deliveries on loopback: it answers 200 and keeps what it got. */
type Delivery = { path: string; headers: IncomingHttpHeaders; body: string };
const received: Delivery[] = [];
const waiters: Array<() => void> = [];
const receiver = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
    res.writeHead(200).end("ok");
    waiters.splice(0).forEach((w) => w());
  });
});

/** until waits for a delivery that matches, up to 30 s. */
async function until(what: string, match: (d: Delivery) => boolean): Promise<Delivery> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const d = received.find(match);
    if (d) return d;
    if (Date.now() > deadline) throw new Error(`no delivery: ${what}`);
    await new Promise<void>((r) => {
      waiters.push(r);
      setTimeout(r, 500);
    });
  }
}

/** fails calls p and returns the AivisError it throws. */
async function fails(p: Promise<unknown>): Promise<AivisError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof AivisError, `not an AivisError: ${e}`);
    return e;
  }
  assert.fail("the call succeeded");
}

describe("against aivis serve", () => {
  let c: Client;
  let hooks: string;
  let domainId: string;
  const called = new Set<string>();
  const domain = "sdk-typescript.example";

  before(async () => {
    // Every call is counted, to check at the end that each operation was made.
    const inner = createAivis({ baseUrl: env("AIVIS_URL"), key: env("AIVIS_KEY"), secret: env("AIVIS_SECRET") });
    c = new Proxy(inner, {
      get(target, name, receiver) {
        const v = Reflect.get(target, name, receiver);
        if (typeof name === "string" && name in OPERATIONS) called.add(name);
        if (name === "paginate") return (op: string, args: unknown) => (called.add(op), (v as Function).call(target, op, args));
        return v;
      },
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    hooks = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  });
  after(() => receiver.close());

  it("health, liveness, readiness and the OpenAPI document", async () => {
    assert.equal((await c.getHealth()).status, "ok");
    assert.ok((await c.getLiveness()).status);
    assert.ok((await c.getReadiness()).status);
    assert.match((await c.getOpenAPIDocument()).openapi, /^3\./);
  });

  it("typed errors from the envelope", async () => {
    const e = await fails(c.getDomain({ path: { id: "dom_nosuchdomain0000000" } }));
    assert.equal(e.status, 404);
    assert.equal(e.code, "NOT_FOUND");
    assert.match(e.requestId, /./);
    const v = await fails(c.createDomain({ body: { domain: "not a domain" } }));
    assert.equal(v.status, 400);
    assert.equal(v.code, "VALIDATION_ERROR");
    assert.equal(v.details?.[0]?.field, "domain");
    const bad = createAivis({ baseUrl: env("AIVIS_URL"), key: env("AIVIS_KEY"), secret: "x".repeat(64) });
    assert.equal((await fails(bad.getBudgetStatus())).status, 401);
  });

  it("domains and their prompts", async () => {
    const d = await c.createDomain({ body: { domain, brands: ["SDK"] }, idempotencyKey: "dom-1" });
    assert.equal(d.domain, domain);
    domainId = d.id;
    const again = await c.createDomain({ body: { domain, brands: ["SDK"] }, idempotencyKey: "dom-1" });
    assert.equal(again.id, d.id, "a repeat with the key is answered with the first response");
    assert.equal((await fails(c.createDomain({ body: { domain } }))).code, "ALREADY_EXISTS");
    assert.equal((await c.getDomain({ path: { id: d.id } })).id, d.id);
    assert.deepEqual((await c.updateDomain({ path: { id: d.id }, body: { brands: ["SDK", "Acme"] } })).brands, ["SDK", "Acme"]);
    const ids: string[] = [];
    for await (const x of c.paginate("listDomains")) ids.push(x.id);
    assert.ok(ids.includes(d.id));
    const put = await c.putDomainPrompts({ path: { id: d.id }, body: { prompts: [{ text: "best sdk for aivis", intent: "discovery" }] } });
    assert.equal(put.prompts[0]?.text, "best sdk for aivis");
    assert.equal((await c.getDomainPrompts({ path: { id: d.id } })).domain_id, d.id);
  });

  it("readings, history, scans and their answers", async () => {
    await c.recordVisibilityReading({ body: { domain, visibility_score: 40, sentiment: "neutral" } });
    await c.recordVisibilityReading({ body: { domain, visibility_score: 70, sentiment: "positive" } });
    assert.equal((await c.getVisibility({ query: { domain } })).visibility_score, 70);
    const scores: number[] = [];
    for await (const r of c.paginate("getVisibilityHistory", { query: { domain, limit: 1 } })) scores.push(r.visibility_score);
    assert.deepEqual(scores, [70, 40], "history paged one at a time, newest first");
    const scan = await c.requestScan({ body: { domain } });
    assert.equal((await c.getScan({ path: { id: scan.id } })).id, scan.id);
    const answers = [];
    for await (const a of c.paginate("listScanAnswers", { path: { id: scan.id } })) answers.push(a);
    assert.ok(Array.isArray(answers));

    // CSV: a header row, then a row per item, CRLF.
    const readings = [];
    for await (const r of c.paginate("getVisibilityHistory", { query: { domain } })) readings.push(r);
    const history = (await c.csv("getVisibilityHistory", { query: { domain } })).split("\r\n");
    assert.match(history[0]!, /^domain,measured_at,visibility_score,/);
    assert.equal(history.pop(), "", "the last row ends with CRLF");
    assert.deepEqual(
      history.slice(1).map((l) => l.split(",").slice(1, 3).join(" ")),
      readings.map((r) => `${r.measured_at} ${r.visibility_score}`),
      "the CSV's rows are the history's readings",
    );
    assert.equal((await c.csv("listScanAnswers", { path: { id: scan.id } })).split("\r\n").length, 2 + answers.length);
    assert.match(await c.csv("getScan", { path: { id: scan.id }, query: { table: "engines" } }), /^engine,/);
  });

  it("webhooks: create (verified by a signed test event), deliveries, rotation, replay", async () => {
    const w = await c.createWebhook({ body: { domain, events: ["ai_visibility_change"], url: `${hooks}/hook` }, idempotencyKey: "wh-1" });
    assert.match(w.secret ?? "", /^whsec_/);
    const test = await until("the webhook_test event", (d) => d.path === "/hook" && d.body.includes('"webhook_test"'));
    assert.equal(verifyWebhook(test.body, test.headers as Record<string, string>, w.secret!).event, "webhook_test");

    await c.recordVisibilityReading({ body: { domain, visibility_score: 20, sentiment: "negative" } });
    const change = await until("the change", (d) => d.path === "/hook" && d.body.includes('"ai_visibility_change"'));
    const ev = verifyWebhook(change.body, change.headers as Record<string, string>, w.secret!);
    assert.equal(ev.event, "ai_visibility_change");

    assert.equal((await c.getWebhook({ path: { id: w.id } })).secret, undefined, "the secret is shown once");
    const listed = [];
    for await (const x of c.paginate("listWebhooks")) listed.push(x.id);
    assert.ok(listed.includes(w.id));
    assert.equal((await c.updateWebhook({ path: { id: w.id }, body: { min_score_change: 5 } })).min_score_change, 5);

    const deliveries = [];
    for await (const x of c.paginate("listWebhookDeliveries", { path: { id: w.id } })) deliveries.push(x);
    const delivered = deliveries.find((x) => x.event_id === ev.id);
    assert.ok(delivered, "the change's delivery is listed");
    assert.equal((await c.getWebhookDelivery({ path: { id: w.id, delivery_id: delivered.id } })).event_id, ev.id);
    assert.ok((await c.csv("listWebhookDeliveries", { path: { id: w.id } })).includes(delivered.id), "the CSV lists the delivery");
    await c.redeliverWebhookDelivery({ path: { id: w.id, delivery_id: delivered.id } });
    const replay = await c.replayWebhookDeliveries({ path: { id: w.id }, body: { since: new Date(Date.now() - 3600_000).toISOString() } });
    assert.equal(typeof replay.scheduled, "number");

    const rotated = await c.rotateWebhookSecret({ path: { id: w.id }, body: { grace_period: 3600 } });
    assert.match(rotated.secret ?? "", /^whsec_/);
    assert.notEqual(rotated.secret, w.secret);
    const before = received.length;
    await c.testWebhook({ path: { id: w.id } });
    const again = await until("the test after the rotation", (d) => received.indexOf(d) >= before && d.body.includes('"webhook_test"'));
    assert.equal(verifyWebhook(again.body, again.headers as Record<string, string>, rotated.secret!).event, "webhook_test");
    assert.equal(verifyWebhook(again.body, again.headers as Record<string, string>, w.secret!).event, "webhook_test", "the old secret still signs in its grace");

    await c.deleteWebhook({ path: { id: w.id } });
    assert.ok((await c.getWebhook({ path: { id: w.id } })).deleted_at, "deleted");
  });

  it("connectors, connections and their deliveries, Zapier hooks", async () => {
    const kinds = (await c.listConnectors()).items.map((k) => k.name);
    assert.ok(kinds.includes("slack"), `connectors: ${kinds}`);
    const conn = await c.createConnection({
      body: { connector: "slack", events: ["ai_visibility_change"], domains: [domain], settings: { webhook_url: `${hooks}/slack` } },
      idempotencyKey: "conn-1",
    });
    assert.equal((await c.getConnection({ path: { id: conn.id } })).connector, "slack");
    const conns = [];
    for await (const x of c.paginate("listConnections")) conns.push(x.id);
    assert.ok(conns.includes(conn.id));
    assert.equal((await c.updateConnection({ path: { id: conn.id }, body: { name: "alerts" } })).name, "alerts");
    assert.ok((await c.testConnection({ path: { id: conn.id } })).result);

    await c.recordVisibilityReading({ body: { domain, visibility_score: 90, sentiment: "positive" } });
    await until("the change at Slack", (d) => d.path === "/slack" && d.body.includes("90"));
    let delivery: Item<"listConnectionDeliveries"> | undefined;
    for (let i = 0; i < 60 && !delivery; i++) {
      for await (const x of c.paginate("listConnectionDeliveries", { path: { id: conn.id } })) if (x.status === "succeeded") delivery = x;
      if (!delivery) await new Promise((r) => setTimeout(r, 500));
    }
    assert.ok(delivery, "a delivered delivery is listed");
    assert.equal((await c.getConnectionDelivery({ path: { id: conn.id, delivery_id: delivery.id } })).id, delivery.id);
    assert.ok((await c.csv("listConnectionDeliveries", { path: { id: conn.id } })).includes(delivery.id), "the CSV lists the delivery");
    await c.redeliverConnectionDelivery({ path: { id: conn.id, delivery_id: delivery.id } });
    assert.equal(typeof (await c.replayConnectionDeliveries({ path: { id: conn.id }, body: { since: new Date(0).toISOString() } })).scheduled, "number");
    await c.deleteConnection({ path: { id: conn.id } });
    assert.ok((await c.getConnection({ path: { id: conn.id } })).deleted_at, "deleted");

    const zap = await c.zapierSubscribe({ body: { target_url: `${hooks}/zap`, event: "ai_visibility_change", domain } });
    assert.equal(zap.event, "ai_visibility_change");
    await c.zapierUnsubscribe({ path: { id: zap.id } });
  });

  it("events and their catalog", async () => {
    const kinds = (await c.listEventTypes()).items.map((t) => t.kind);
    assert.ok(kinds.includes("ai_visibility_change"), `event types: ${kinds}`);
    const page = await c.listRecentEvents({ query: { event: "ai_visibility_change" } });
    assert.ok(page.items.length >= 3, `events: ${page.items.length}`);
    const oneAPage = [];
    for await (const e of c.paginate("listRecentEvents", { query: { event: "ai_visibility_change", limit: 1 } })) oneAPage.push(e.id);
    assert.deepEqual(oneAPage, page.items.map((e) => e.id), "one a page lists what one page does");
    const bad = await fails(c.listRecentEvents({ query: { cursor: "x" } }));
    assert.equal(bad.status, 400);
  });

  it("content requests and the budget, on the key-and-secret interface", async () => {
    const status = await c.getBudgetStatus();
    assert.ok(status);
    const cr = await c.createContentRequest({
      body: { domain, budget: 2, type: "analyze", content: "# Widgets\n\nA widget automates one chore." },
      idempotencyKey: "cr-1",
    });
    const replayed = await c.createContentRequest({
      body: { domain, budget: 2, type: "analyze", content: "# Widgets\n\nA widget automates one chore." },
      idempotencyKey: "cr-1",
    });
    assert.equal(replayed.id, cr.id, "the same key answers the first request");
    const conflict = await fails(c.createContentRequest({ body: { domain, budget: 3, type: "analyze", content: "# Other" }, idempotencyKey: "cr-1" }));
    assert.equal(conflict.status, 409);
    assert.equal(conflict.code, "IDEMPOTENCY_CONFLICT");
    assert.equal((await c.getContentRequest({ path: { id: cr.id } })).status, "queued");
    const ids = [];
    for await (const x of c.paginate("listContentRequests")) ids.push(x.id);
    assert.ok(ids.includes(cr.id));
    assert.equal((await c.cancelContentRequest({ path: { id: cr.id } })).status, "cancelled");
    // Only a completed request's result is published.
    const unpublished = await fails(c.publishContentRequest({ path: { id: cr.id }, body: { url: `https://${domain}/widgets` } }));
    assert.equal(unpublished.code, "INVALID_STATE");
  });

  it("usage per key and hour, as JSON and as CSV", async () => {
    // The key's requests reach the store within its counter's flush (1 s).
    let mine: Item<"listUsage">[] = [];
    for (let i = 0; i < 60 && mine.length === 0; i++) {
      mine = [];
      for await (const u of c.paginate("listUsage", { query: { limit: 1 } })) mine.push(u);
      if (mine.length === 0) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(mine.length > 0, "the key's requests are counted");
    for (const u of mine) {
      assert.ok(u.requests >= 1 && u.key_hint.startsWith("svc_") && u.client_id === null, JSON.stringify(u));
      assert.equal(new Date(u.hour).getUTCMinutes(), 0);
    }
    const csv = await c.csv("listUsage", { query: { key_id: mine[0].key_id } });
    assert.ok(csv.startsWith("hour,key_id,key_name,key_hint,client_id,requests\r\n"), csv);
    assert.ok(csv.includes(mine[0].key_id));
    let streamed = "";
    const decoder = new TextDecoder();
    for await (const chunk of await c.csvStream("listUsage", { query: { key_id: mine[0].key_id } })) streamed += decoder.decode(chunk, { stream: true });
    assert.equal(streamed.split("\r\n")[0], "hour,key_id,key_name,key_hint,client_id,requests");
    assert.ok(streamed.includes(mine[0].key_id), "the stream is the export");
    const bad = await fails(c.csvStream("listUsage", { query: { from: "yesterday" } }));
    assert.equal(bad.status, 400);
    assert.equal(bad.details?.[0]?.field, "from");
  });

  it("the account's export", async () => {
    const lines: string = await c.exportAccount();
    assert.ok(lines.split("\n").some((l) => l.includes(domain)));
  });

  it("429: a Starter key's minute spent, the client waits what the server says", async () => {
    // The windows are UTC minutes: start away from a minute's end, so that
    // the spent minute lasts until the retrying client's third attempt.
    const ms = Date.now() % 60_000;
    if (ms > 45_000) await new Promise((r) => setTimeout(r, 60_000 - ms + 100));
    const spend = createAivis({ baseUrl: env("AIVIS_URL"), key: env("AIVIS_LIMITED_KEY"), maxAttempts: 1 });
    let refused: AivisError | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const answers = await Promise.allSettled(Array.from({ length: 10 }, () => spend.listDomains()));
      for (const a of answers) if (a.status === "rejected") refused = a.reason;
    }
    assert.ok(refused instanceof AivisError, "200 requests of a Starter key were never refused");
    assert.equal(refused.status, 429);
    assert.equal(refused.code, "RATE_LIMIT_EXCEEDED");
    assert.ok(refused.retryAfter! >= 1 && refused.retryAfter! <= 60, `retry_after ${refused.retryAfter}`);

    const waits: number[] = [];
    const retrying = createAivis({
      baseUrl: env("AIVIS_URL"),
      key: env("AIVIS_LIMITED_KEY"),
      sleep: async (ms) => void waits.push(ms),
    });
    const e = await fails(retrying.listDomains());
    assert.equal(e.status, 429);
    assert.equal(waits.length, 2, "three attempts, two waits");
    for (const w of waits) assert.ok(w >= 1000 && w <= 60_000 && w % 1000 === 0, `waited ${w} ms`);
  });

  it("traffic: ingest tokens, each CDN's delivery, a log upload, the summary, the pages and the crawlers", async () => {
    const id = { id: domainId };
    const gptbot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot";
    const now = new Date();
    const today = now.toISOString().slice(0, 10);
    const cf = await c.createIngestToken({ path: id, body: { name: "edge", source: "cloudflare" }, idempotencyKey: "tok-cf" });
    assert.match(cf.token, /^aivt_/);
    const fastly = await c.createIngestToken({ path: id, body: { name: "fastly", source: "fastly" } });
    const vercel = await c.createIngestToken({ path: id, body: { name: "drain", source: "vercel", signing_secret: "drain-secret" } });

    assert.equal((await c.getFastlyChallenge()).trim(), "*");
    assert.deepEqual(await c.verifyVercelDrain({ query: { verify: "code-1" } }), { verified: true });
    const cfBatch = JSON.stringify({ ClientIP: "52.230.152.7", ClientRequestHost: domain, ClientRequestMethod: "GET",
      ClientRequestPath: "/pricing", ClientRequestURI: "/pricing", ClientRequestUserAgent: gptbot, ClientRequestReferer: "",
      EdgeResponseStatus: 200, EdgeResponseBytes: 5000, EdgeStartTimestamp: now.toISOString() }) + "\n";
    const kept = await c.ingestCloudflare({ token: cf.token, body: cfBatch, contentType: "application/x-ndjson" });
    assert.ok("lines" in kept && kept.lines === 1 && !kept.duplicate, JSON.stringify(kept));
    const fsBatch = JSON.stringify({ timestamp: now.toISOString(), client_ip: "198.51.100.4", method: "GET", url: "/docs", status: 404,
      bytes: 10, referer: "", user_agent: "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)" }) + "\n";
    assert.equal((await c.ingestFastly({ token: fastly.token, body: fsBatch, contentType: "application/x-ndjson" })).malformed, 0);
    const vcBatch = JSON.stringify([{ id: "1", timestamp: now.getTime(), source: "static", proxy: { timestamp: now.getTime(), method: "GET",
      host: domain, path: "/blog", userAgent: ["Mozilla/5.0 Chrome/131"], referer: "https://www.perplexity.ai/", statusCode: 200, clientIp: "192.0.2.2" } }]);
    const signature = createHmac("sha1", "drain-secret").update(vcBatch).digest("hex");
    assert.equal((await c.ingestVercel({ token: vercel.token, body: vcBatch, contentType: "application/json",
      headers: { "x-vercel-signature": signature } })).lines, 1);
    const bad = await fails(c.ingestVercel({ token: vercel.token, body: vcBatch, headers: { "x-vercel-signature": "0".repeat(40) } }));
    assert.equal(bad.code, "WEBHOOK_VERIFICATION_FAILED");

    const stamp = `${String(now.getUTCDate()).padStart(2, "0")}/${now.toLocaleString("en", { month: "short", timeZone: "UTC" })}/${now.getUTCFullYear()}:00:00:00 +0000`;
    const log = `52.230.152.8 - - [${stamp}] "GET /pricing HTTP/1.1" 500 0 "-" "${gptbot}"\nnot a log line\n`;
    const up = await c.uploadTrafficLogs({ path: id, body: log, idempotencyKey: "log-1" });
    assert.equal(up.lines, 2);
    assert.equal(up.malformed, 1);
    assert.equal((await c.uploadTrafficLogs({ path: id, body: log })).duplicate, true);

    const sum = await c.getTraffic({ path: id, query: { from: today, to: today } });
    assert.deepEqual(sum.agents.map((a) => [a.agent, a.hits, a.by_verification.verified]), [["GPTBot", 2, 2], ["ClaudeBot", 1, 0]]);
    assert.deepEqual(sum.problems.map((p) => [p.page, p.agent, p.status]).sort(), [["/docs", "ClaudeBot", "4xx"], ["/pricing", "GPTBot", "5xx"]]);
    assert.deepEqual(sum.referrals.map((r) => [r.assistant, r.visits]), [["perplexity", 1]]);
    const bad2 = await fails(c.getTraffic({ path: id, query: { from: "yesterday" } }));
    assert.equal(bad2.details?.[0]?.field, "from");
    const pages = await c.listTrafficPages({ path: id, query: { limit: 1 } });
    assert.equal(pages.items[0].page, "/blog");
    const all: string[] = [];
    for await (const p of c.paginate("listTrafficPages", { path: id })) all.push(p.page);
    // The pages the scans' answers cited are among them too.
    assert.deepEqual(all.filter((p) => ["/blog", "/docs", "/pricing"].includes(p)), ["/blog", "/docs", "/pricing"]);
    assert.match(await c.csv("listTrafficPages", { path: id }), /^page,crawler_hits,.*\r\n\/blog,/s);

    assert.deepEqual((await c.listIngestTokens({ path: id })).items.map((t) => t.name).sort(), ["drain", "edge", "fastly"]);
    await c.revokeIngestToken({ path: { id: domainId, token_id: cf.id } });
    assert.equal((await fails(c.ingestCloudflare({ token: cf.token, body: cfBatch }))).status, 401);
    const crawlers = await c.listCrawlers();
    assert.ok(crawlers.items.some((k) => k.token === "GPTBot" && k.lists.some((l) => l.loaded)));
  });

  it("changes and their lift", async () => {
    const id = { id: domainId };
    const at = new Date(Date.now() - 3600_000).toISOString();
    const body = { title: "FAQ markup on /pricing", at, pages: [`https://${domain}/pricing?x=1`], prompts: ["Best SDK for aivis"] };
    const made = await c.createChange({ path: id, body, idempotencyKey: "chg-1" });
    assert.deepEqual([made.pages, made.prompts, made.content_request_id, made.lift_measured_at], [["/pricing"], ["best sdk for aivis"], null, null]);
    assert.equal((await c.createChange({ path: id, body, idempotencyKey: "chg-1" })).id, made.id, "a repeat with the key is the first answer");
    const bad = await fails(c.createChange({ path: id, body: { title: "", prompts: ["not a prompt of the domain"] } }));
    assert.deepEqual(bad.details?.map((d) => d.field), ["title", "prompts[0]"]);
    assert.equal((await c.getChange({ path: { id: domainId, change_id: made.id } })).title, "FAQ markup on /pricing");
    const listed: string[] = [];
    for await (const x of c.paginate("listChanges", { path: id, query: { from: at.slice(0, 10) } })) listed.push(x.id);
    assert.deepEqual(listed, [made.id]);
    // One scan before the change and none after: no figure, and the scans still needed.
    const l = await c.getChangeLift({ path: { id: domainId, change_id: made.id }, query: { scans: 3, effect: 0.2 } });
    assert.equal(l.change.id, made.id);
    const citation = l.lift.overall.measures.find((m) => m.metric === "citation_rate")!;
    assert.equal(citation.difference.status, "insufficient_data");
    assert.equal(citation.difference.estimate, undefined);
    assert.equal(citation.difference.effect, 0.2);
    assert.equal(l.lift.after.scans, 0);
    assert.equal((await fails(c.getChangeLift({ path: { id: domainId, change_id: made.id }, query: { scans: 0 } }))).details?.[0]?.field, "scans");
    await c.deleteChange({ path: { id: domainId, change_id: made.id } });
    assert.equal((await fails(c.getChange({ path: { id: domainId, change_id: made.id } }))).status, 404);
  });

  it("deleting the domain", async () => {
    await c.deleteDomain({ path: { id: domainId } });
    assert.equal((await fails(c.getDomain({ path: { id: domainId } }))).status, 404);
  });

  it("made every operation", () => {
    assert.deepEqual(Object.keys(OPERATIONS).filter((op) => !called.has(op)), []);
  });
});
