// The aivis API client: every operation of core/api/openapi.json as a typed
// method, on openapi-fetch. See README.md.
import createClient from "openapi-fetch";
import { Webhook as StandardWebhook } from "standardwebhooks";
import type { components, operations } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

/** Every operation: its method and path, as the OpenAPI document has them. */
export const OPERATIONS = {
  getBudgetStatus: ["get", "/api/v1/ai/budget-status"],
  listContentRequests: ["get", "/api/v1/ai/content-requests"],
  createContentRequest: ["post", "/api/v1/ai/content-requests"],
  getContentRequest: ["get", "/api/v1/ai/content-requests/{id}"],
  cancelContentRequest: ["post", "/api/v1/ai/content-requests/{id}/cancel"],
  getVisibility: ["get", "/v1/visibility"],
  recordVisibilityReading: ["post", "/v1/visibility"],
  getOpenAPIDocument: ["get", "/openapi.json"],
  getHealth: ["get", "/healthz"],
  getLiveness: ["get", "/livez"],
  getReadiness: ["get", "/readyz"],
  listWebhooks: ["get", "/v1/webhooks"],
  createWebhook: ["post", "/v1/webhooks"],
  getWebhook: ["get", "/v1/webhooks/{id}"],
  updateWebhook: ["patch", "/v1/webhooks/{id}"],
  deleteWebhook: ["delete", "/v1/webhooks/{id}"],
  rotateWebhookSecret: ["post", "/v1/webhooks/{id}/rotate-secret"],
  testWebhook: ["post", "/v1/webhooks/{id}/test"],
  replayWebhookDeliveries: ["post", "/v1/webhooks/{id}/replay"],
  listWebhookDeliveries: ["get", "/v1/webhooks/{id}/deliveries"],
  getWebhookDelivery: ["get", "/v1/webhooks/{id}/deliveries/{delivery_id}"],
  redeliverWebhookDelivery: ["post", "/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver"],
  listConnectors: ["get", "/v1/connectors"],
  listConnections: ["get", "/v1/connections"],
  createConnection: ["post", "/v1/connections"],
  getConnection: ["get", "/v1/connections/{id}"],
  updateConnection: ["patch", "/v1/connections/{id}"],
  deleteConnection: ["delete", "/v1/connections/{id}"],
  testConnection: ["post", "/v1/connections/{id}/test"],
  replayConnectionDeliveries: ["post", "/v1/connections/{id}/replay"],
  listConnectionDeliveries: ["get", "/v1/connections/{id}/deliveries"],
  getConnectionDelivery: ["get", "/v1/connections/{id}/deliveries/{delivery_id}"],
  redeliverConnectionDelivery: ["post", "/v1/connections/{id}/deliveries/{delivery_id}/redeliver"],
  listEventTypes: ["get", "/v1/event-types"],
  listRecentEvents: ["get", "/v1/events"],
  listUsage: ["get", "/v1/usage"],
  zapierSubscribe: ["post", "/v1/zapier/hooks"],
  zapierUnsubscribe: ["delete", "/v1/zapier/hooks/{id}"],
  listDomains: ["get", "/v1/domains"],
  createDomain: ["post", "/v1/domains"],
  getDomain: ["get", "/v1/domains/{id}"],
  updateDomain: ["patch", "/v1/domains/{id}"],
  deleteDomain: ["delete", "/v1/domains/{id}"],
  getDomainPrompts: ["get", "/v1/domains/{id}/prompts"],
  putDomainPrompts: ["put", "/v1/domains/{id}/prompts"],
  getVisibilityHistory: ["get", "/v1/visibility/history"],
  requestScan: ["post", "/v1/visibility/scans"],
  getScan: ["get", "/v1/visibility/scans/{id}"],
  listScanAnswers: ["get", "/v1/visibility/scans/{id}/answers"],
  exportAccount: ["get", "/v1/account/export"],
  getTraffic: ["get", "/v1/domains/{id}/traffic"],
  listTrafficPages: ["get", "/v1/domains/{id}/traffic/pages"],
  uploadTrafficLogs: ["post", "/v1/domains/{id}/traffic/logs"],
  listIngestTokens: ["get", "/v1/domains/{id}/ingest-tokens"],
  createIngestToken: ["post", "/v1/domains/{id}/ingest-tokens"],
  revokeIngestToken: ["delete", "/v1/domains/{id}/ingest-tokens/{token_id}"],
  listCrawlers: ["get", "/v1/crawlers"],
  ingestCloudflare: ["post", "/ingest/v1/cloudflare"],
  ingestVercel: ["post", "/ingest/v1/vercel"],
  verifyVercelDrain: ["get", "/ingest/v1/vercel"],
  ingestFastly: ["post", "/ingest/v1/fastly"],
  getFastlyChallenge: ["get", "/.well-known/fastly/logging/challenge"],
  listChanges: ["get", "/v1/domains/{id}/changes"],
  createChange: ["post", "/v1/domains/{id}/changes"],
  getChange: ["get", "/v1/domains/{id}/changes/{change_id}"],
  deleteChange: ["delete", "/v1/domains/{id}/changes/{change_id}"],
  getChangeLift: ["get", "/v1/domains/{id}/changes/{change_id}/lift"],
  publishContentRequest: ["post", "/api/v1/ai/content-requests/{id}/published"],
} as const satisfies Record<Exclude<keyof operations, `event_${string}`>, readonly [string, string]>;

export type OperationId = keyof typeof OPERATIONS;

type Params<O extends OperationId> = operations[O]["parameters"];
// format=csv is csv()'s: the methods answer JSON.
type QueryOf<O extends OperationId> = Params<O> extends { query?: infer Q } ? ([Q] extends [undefined] ? never : Omit<NonNullable<Q>, "format">) : never;
type PathOf<O extends OperationId> = Params<O> extends { path: infer P } ? P : never;
type BodyOf<O extends OperationId> = operations[O] extends {
  requestBody?: { content: { "application/json": infer B } };
}
  ? B
  : never;
type BodyRequired<O extends OperationId> = operations[O] extends { requestBody: { content: unknown } } ? true : false;
// A body sent as it is (a log file, a CDN's batch): one whose content is
// not JSON, or is JSON text the sender has already written.
type RawBody<O extends OperationId> = operations[O] extends { requestBody: { content: infer C } }
  ? C extends { "application/json": infer J }
    ? [J] extends [string]
      ? true
      : false
    : true
  : false;
type Content<R> = R extends { content: infer C } ? (C extends { "application/json": infer J } ? J : string) : void;
type Success<O extends OperationId> = operations[O]["responses"] extends infer R
  ? R extends Record<number, unknown>
    ? Content<R[Extract<keyof R, 200 | 201 | 202 | 204>]>
    : never
  : never;
type Unwrap<T> = T extends { success: true; data: infer D } ? D : T;

/** What an operation answers on success: the key-and-secret interface's envelope unwrapped to its data. */
export type Result<O extends OperationId> = Unwrap<Success<O>>;

/** The arguments of an operation: its path parameters, query, body and request options. */
export type Args<O extends OperationId> = ([PathOf<O>] extends [never] ? { path?: never } : { path: PathOf<O> }) &
  ([QueryOf<O>] extends [never] | [undefined] ? { query?: never } : { query?: QueryOf<O> }) &
  (RawBody<O> extends true
    ? {
        /** The body as it is sent: a log file or a batch, gzip or plain. */
        body: string | Uint8Array;
        /** Its Content-Type (text/plain by default; application/gzip for a gzip file). */
        contentType?: string;
      }
    : [BodyOf<O>] extends [never]
      ? { body?: never }
      : BodyRequired<O> extends true
        ? { body: BodyOf<O> }
        : { body?: BodyOf<O> }) & {
    /** Makes a POST safe to repeat: a repeat within 24 h is answered with the first response. */
    idempotencyKey?: string;
    /** The domain's ingest token, on the ingest endpoints (/ingest/v1), which take no API key. */
    token?: string;
    /** More request headers (x-vercel-signature on ingestVercel). */
    headers?: Record<string, string>;
    signal?: AbortSignal;
  };

type Needs<O extends OperationId> = [PathOf<O>] extends [never] ? BodyRequired<O> : true;

/** One method per operation of the OpenAPI document. */
export type Operations = {
  [O in OperationId]: Needs<O> extends true ? (args: Args<O>) => Promise<Result<O>> : (args?: Args<O>) => Promise<Result<O>>;
};

export type ErrorDetail = components["schemas"]["ErrorDetail"];
export type ErrorCode = components["schemas"]["ErrorCode"];

/** A failure the server answered with its error envelope (or, without one, its status). */
export class AivisError extends Error {
  readonly status: number;
  readonly code: ErrorCode | "HTTP_ERROR";
  readonly requestId: string;
  /** Seconds the server asked to wait (on 429 and some 503s), else undefined. */
  readonly retryAfter?: number;
  readonly details?: ErrorDetail["details"];

  constructor(status: number, detail: Partial<ErrorDetail> | undefined, retryAfterHeader?: number) {
    super(detail?.message ?? `the server answered ${status}`);
    this.name = "AivisError";
    this.status = status;
    this.code = detail?.code ?? "HTTP_ERROR";
    this.requestId = detail?.request_id ?? "";
    this.retryAfter = detail?.retry_after ?? retryAfterHeader;
    this.details = detail?.details;
  }
}

export interface ClientOptions {
  /** The server's URL, e.g. https://aivis.example.com. */
  baseUrl: string;
  /** The API key, svc_...: alone on the bearer interface (/v1). */
  key: string;
  /** The API secret: with the key on the key-and-secret interface (/api/v1/ai). */
  secret?: string;
  /** Attempts of a call answered 429 before its error is thrown; 3 by default. */
  maxAttempts?: number;
  /** How to wait between attempts (tests replace it). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  fetch?: (input: Request) => Promise<Response>;
  userAgent?: string;
}

export type Client = Operations & {
  /** The openapi-fetch client underneath, authenticated and retrying, for calls the methods do not shape. */
  readonly raw: ReturnType<typeof createClient<import("./schema.js").paths>>;
  /** Every item of a cursor-paged list, page after page. */
  paginate<O extends ListOperation>(op: O, args?: Args<O>): AsyncIterableIterator<Item<O>>;
  /** The CSV export of a list (or of a scan's table): every item, as RFC 4180 text with a header row. */
  csv<O extends CSVOperation>(op: O, args: Args<O>): Promise<string>;
  /** The same CSV export as a stream of its bytes, read as the server sends it: for an export too large to hold. */
  csvStream<O extends CSVOperation>(op: O, args: Args<O>): Promise<ReadableStream<Uint8Array>>;
};

/** The operations that answer CSV with format=csv. */
export type CSVOperation = {
  [O in OperationId]: operations[O]["responses"] extends { 200: { content: { "text/csv": unknown } } } ? O : never;
}[OperationId];

type Page = { items: unknown[]; has_more: boolean; next_cursor?: string | null };
/** The operations that answer a page with a cursor. */
export type ListOperation = {
  [O in OperationId]: Result<O> extends Page ? ("cursor" extends keyof NonNullable<QueryOf<O>> ? O : never) : never;
}[OperationId];
export type Item<O extends OperationId> = Result<O> extends { items: (infer I)[] } ? I : never;

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });

/** retryAfter reads a 429's wait: error.retry_after, else Retry-After, else 60 s. */
async function retryAfter(res: Response): Promise<number> {
  try {
    const env = (await res.clone().json()) as { error?: { retry_after?: number } };
    if (typeof env.error?.retry_after === "number" && env.error.retry_after > 0) return env.error.retry_after;
  } catch {
    // not JSON: the header decides
  }
  const h = Number(res.headers.get("Retry-After"));
  return Number.isInteger(h) && h > 0 ? h : 60;
}

/** createAivis returns a client for the server at opts.baseUrl. */
export function createAivis(opts: ClientOptions): Client {
  const base = opts.baseUrl.replace(/\/+$/, "");
  const basePath = new URL(base).pathname.replace(/\/+$/, "");
  const maxAttempts = opts.maxAttempts ?? 3;
  const sleep = opts.sleep ?? defaultSleep;
  const send = opts.fetch ?? ((r: Request) => globalThis.fetch(r));
  const fetchWithAuth = async (input: Request): Promise<Response> => {
    const path = new URL(input.url).pathname.slice(basePath.length);
    const headers = new Headers(input.headers);
    if (path.startsWith("/api/v1/ai/")) {
      if (opts.secret === undefined) throw new Error("aivis: the key-and-secret interface (/api/v1/ai) needs the secret");
      headers.set("X-API-Key", opts.key);
      headers.set("X-API-Secret", opts.secret);
    } else if (path.startsWith("/v1/")) {
      headers.set("Authorization", `Bearer ${opts.key}`);
    }
    headers.set("User-Agent", opts.userAgent ?? "aivis-typescript/0.1.0");
    const req = new Request(input, { headers });
    for (let attempt = 1; ; attempt++) {
      const res = await send(req.clone());
      if (res.status !== 429 || attempt >= maxAttempts) return res;
      const wait = await retryAfter(res);
      await res.body?.cancel();
      await sleep(wait * 1000, input.signal);
    }
  };
  const raw = createClient<import("./schema.js").paths>({ baseUrl: base, fetch: fetchWithAuth });

  const call = async (op: OperationId, args: Record<string, unknown> = {}, parseAs: "text" | "stream" = "text"): Promise<unknown> => {
    const [method, path] = OPERATIONS[op];
    const headers: Record<string, string> = { ...(args.headers as Record<string, string> | undefined) };
    if (typeof args.idempotencyKey === "string") headers["Idempotency-Key"] = args.idempotencyKey;
    if (typeof args.token === "string") headers["Authorization"] = `Bearer ${args.token}`;
    const asIs = typeof args.body === "string" || args.body instanceof Uint8Array;
    if (asIs) headers["Content-Type"] = typeof args.contentType === "string" ? args.contentType : "text/plain";
    const init = {
      params: { path: args.path, query: args.query },
      body: args.body,
      // A raw body goes as it is; any other is JSON.
      ...(asIs ? { bodySerializer: (b: unknown) => b } : {}),
      headers,
      signal: args.signal,
      // Read as text, then JSON when the answer says so: the export's
      // NDJSON (and any text/csv answer) stays text. A stream is left unread.
      parseAs,
    };
    // Each method's types come from OPERATIONS' entry; openapi-fetch builds the request.
    const { data, error, response } = await (raw.request as (m: string, p: string, i: unknown) => Promise<{
      data?: unknown;
      error?: unknown;
      response: Response;
    }>)(method, path, init);
    if (!response.ok) {
      const env = error as { error?: Partial<ErrorDetail> } | undefined;
      const h = Number(response.headers.get("Retry-After"));
      throw new AivisError(response.status, typeof env === "object" ? env?.error : undefined, h > 0 ? h : undefined);
    }
    if (typeof data !== "string" || !/^application\/(.+\+)?json\b/.test(response.headers.get("Content-Type") ?? "")) return data;
    const body = JSON.parse(data) as unknown;
    if (body && typeof body === "object" && "success" in body && "data" in body) return (body as { data: unknown }).data;
    return body;
  };

  const client = {
    raw,
    async *paginate(op: OperationId, args: Record<string, unknown> = {}) {
      let cursor: string | undefined;
      for (;;) {
        const query = { ...(args.query as object | undefined), ...(cursor ? { cursor } : {}) };
        const page = (await call(op, { ...args, query })) as Page;
        yield* page.items;
        if (!page.has_more || !page.next_cursor) return;
        cursor = page.next_cursor;
      }
    },
    csv: (op: OperationId, args: Record<string, unknown> = {}) =>
      call(op, { ...args, query: { ...(args.query as object | undefined), format: "csv" } }),
    csvStream: (op: OperationId, args: Record<string, unknown> = {}) =>
      call(op, { ...args, query: { ...(args.query as object | undefined), format: "csv" } }, "stream"),
  } as Record<string, unknown>;
  for (const op of Object.keys(OPERATIONS) as OperationId[]) client[op] = (args?: Record<string, unknown>) => call(op, args);
  return client as unknown as Client;
}

/** A delivery's failed verification: a bad signature, a stale timestamp or missing headers. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

export type WebhookEvent = { id: string; event: string; timestamp: string; data: Record<string, unknown> };

/**
 * verifyWebhook checks a delivery with the Standard Webhooks library and
 * returns its event: body is the raw request body, headers its headers,
 * secrets the webhook's whsec_ secret (or, during a rotation, both).
 */
export function verifyWebhook(
  body: string | Buffer,
  headers: Record<string, string | string[] | undefined> | Headers,
  ...secrets: string[]
): WebhookEvent {
  const get = (name: string): string => {
    const v = headers instanceof Headers ? headers.get(name) : (headers[name] ?? headers[name.toLowerCase()]);
    return Array.isArray(v) ? v.join(" ") : (v ?? "");
  };
  const h = { "webhook-id": get("webhook-id"), "webhook-timestamp": get("webhook-timestamp"), "webhook-signature": get("webhook-signature") };
  if (secrets.length === 0) throw new WebhookVerificationError("no secret to verify with");
  let last: unknown;
  for (const s of secrets) {
    try {
      return new StandardWebhook(s).verify(body, h) as WebhookEvent;
    } catch (e) {
      last = e;
    }
  }
  throw new WebhookVerificationError(last instanceof Error ? last.message : String(last));
}
