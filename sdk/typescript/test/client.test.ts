// Tests of the client that need no server: its operations are the OpenAPI
// document's, its 429 behaviour (on a fake fetch) and webhook verification.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { Webhook } from "standardwebhooks";
import { AivisError, createAivis, OPERATIONS, verifyWebhook, WebhookVerificationError } from "../src/index.js";

describe("operations", () => {
  it("has a method for every operationId of openapi.json, with its method and path", () => {
    const doc = JSON.parse(readFileSync(new URL("../../../../core/api/openapi.json", import.meta.url), "utf8"));
    const c = createAivis({ baseUrl: "https://aivis.invalid", key: "k", secret: "s" }) as unknown as Record<string, unknown>;
    const seen: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { operationId?: string }>>)) {
      for (const [method, op] of Object.entries(item)) {
        if (!op?.operationId) continue;
        seen.push(op.operationId);
        assert.equal(typeof c[op.operationId], "function", `no method for ${op.operationId}`);
        assert.deepEqual(OPERATIONS[op.operationId as keyof typeof OPERATIONS], [method, path], op.operationId);
      }
    }
    assert.deepEqual(Object.keys(OPERATIONS).sort(), seen.sort(), "OPERATIONS names an operation openapi.json lacks");
  });
});

describe("429", () => {
  const limited = (retryAfter: number | null, header: string | null) =>
    new Response(
      JSON.stringify({ success: false, error: { code: "RATE_LIMIT_EXCEEDED", message: "slow down", request_id: "req_1", ...(retryAfter ? { retry_after: retryAfter } : {}) } }),
      { status: 429, headers: { "Content-Type": "application/json", ...(header ? { "Retry-After": header } : {}) } },
    );
  const ok = () => new Response(JSON.stringify({ status: "ok" }), { status: 200, headers: { "Content-Type": "application/json" } });
  const fake = (answers: Response[]) => {
    const waits: number[] = [];
    const seen: Request[] = [];
    const c = createAivis({
      baseUrl: "https://aivis.invalid",
      key: "svc_k",
      fetch: async (r) => (seen.push(r), answers.shift()!),
      sleep: async (ms) => void waits.push(ms),
    });
    return { c, waits, seen };
  };

  it("waits error.retry_after, then succeeds", async () => {
    const { c, waits, seen } = fake([limited(2, "9"), ok()]);
    assert.deepEqual(await c.getHealth(), { status: "ok" });
    assert.deepEqual(waits, [2000]);
    assert.equal(seen.length, 2);
  });
  it("waits Retry-After when the body has no retry_after, else 60 s", async () => {
    const { c, waits } = fake([limited(null, "7"), limited(null, null), ok()]);
    await c.getHealth();
    assert.deepEqual(waits, [7000, 60000]);
  });
  it("gives up after three attempts with the envelope's error", async () => {
    const { c, waits } = fake([limited(1, null), limited(1, null), limited(4, null), ok()]);
    const err = await c.getHealth().then(
      () => assert.fail("no error"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AivisError);
    assert.equal(err.status, 429);
    assert.equal(err.code, "RATE_LIMIT_EXCEEDED");
    assert.equal(err.retryAfter, 4);
    assert.equal(err.requestId, "req_1");
    assert.deepEqual(waits, [1000, 1000]);
  });
  it("resends the body on a retry", async () => {
    const { c, seen } = fake([limited(1, null), new Response("{}", { status: 201, headers: { "Content-Type": "application/json" } })]);
    await c.createDomain({ body: { domain: "example.com" }, idempotencyKey: "k1" });
    assert.equal(seen.length, 2);
    for (const r of seen) {
      assert.equal(await r.text(), '{"domain":"example.com"}');
      assert.equal(r.headers.get("Idempotency-Key"), "k1");
      assert.equal(r.headers.get("Authorization"), "Bearer svc_k");
    }
  });
});

describe("credentials", () => {
  it("the key and secret under /api/v1/ai, the bearer key under /v1, nothing on the rest", async () => {
    const seen: Request[] = [];
    const c = createAivis({
      baseUrl: "https://aivis.invalid/base/",
      key: "svc_k",
      secret: "s3cret",
      fetch: async (r) => (seen.push(r), new Response("{}", { status: 200, headers: { "Content-Type": "application/json" } })),
    });
    await c.getBudgetStatus();
    await c.listDomains();
    await c.getHealth();
    const auth = seen.map((r) => [new URL(r.url).pathname, r.headers.get("X-API-Key"), r.headers.get("X-API-Secret"), r.headers.get("Authorization")]);
    assert.deepEqual(auth, [
      ["/base/api/v1/ai/budget-status", "svc_k", "s3cret", null],
      ["/base/v1/domains", null, null, "Bearer svc_k"],
      ["/base/healthz", null, null, null],
    ]);
  });
  it("refuses a key-and-secret call without the secret, sending nothing", async () => {
    let sent = 0;
    const c = createAivis({ baseUrl: "https://aivis.invalid", key: "svc_k", fetch: async () => (sent++, new Response("{}")) });
    await assert.rejects(c.getBudgetStatus(), /needs the secret/);
    assert.equal(sent, 0);
  });
});

describe("verifyWebhook", () => {
  const secret = "whsec_" + Buffer.alloc(32, 7).toString("base64");
  const other = "whsec_" + Buffer.alloc(32, 9).toString("base64");
  const body = '{"id":"evt_1","event":"webhook_test","timestamp":"2026-11-22T10:00:00Z","data":{}}';
  const signed = (s: string, at = new Date()) => {
    const ts = String(Math.floor(at.getTime() / 1000));
    return { "webhook-id": "evt_1", "webhook-timestamp": ts, "webhook-signature": new Webhook(s).sign("evt_1", at, body) };
  };
  it("accepts a delivery signed with the secret, or either secret of a rotation", () => {
    assert.equal(verifyWebhook(body, signed(secret), secret).id, "evt_1");
    assert.equal(verifyWebhook(body, new Headers(signed(secret)), other, secret).event, "webhook_test");
  });
  it("refuses another secret, a changed body and an hour-old timestamp", () => {
    assert.throws(() => verifyWebhook(body, signed(secret), other), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body + " ", signed(secret), secret), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, signed(secret, new Date(Date.now() - 3600_000)), secret), WebhookVerificationError);
    assert.throws(() => verifyWebhook(body, {}, secret), WebhookVerificationError);
  });
});
