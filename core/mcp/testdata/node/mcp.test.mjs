// The official TypeScript SDK's client against aivis serve's /mcp: it
// initializes a 2025-11-25 session with the bearer key, lists the tools
// and calls every one. Run by core/mcp's TestNodeSDK, which starts the
// server and passes AIVIS_URL, AIVIS_KEY, AIVIS_READ_KEY, AIVIS_DOMAIN
// and NODE_EXTRA_CA_CERTS (the server's certificate).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const url = new URL('/mcp', process.env.AIVIS_URL);
const domain = process.env.AIVIS_DOMAIN;

async function connect(key) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const client = new Client({ name: 'aivis-node-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// call calls a tool that must succeed and returns its structured content.
async function call(client, name, args = {}) {
  const res = await client.callTool({ name, arguments: args });
  assert.notEqual(res.isError, true, `${name}: ${JSON.stringify(res.content)}`);
  assert.ok(res.structuredContent, `${name}: no structured content`);
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent, `${name}: the text block is not the structured content`);
  return res.structuredContent;
}

// refused calls a tool that must fail with the API's error code.
async function refused(client, name, args, code) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name}: ${JSON.stringify(res)}`);
  const { error } = JSON.parse(res.content[0].text);
  assert.equal(error.code, code);
  assert.ok(error.request_id && error.message);
  return error;
}

async function completedScan(client) {
  const scan = await call(client, 'start_scan', { domain });
  assert.match(scan.status, /^(queued|running)$/);
  const deadline = Date.now() + 90_000;
  for (;;) {
    const st = await call(client, 'get_scan', { scan_id: scan.id });
    if (st.status === 'completed') return scan.id;
    assert.notEqual(st.status, 'failed', JSON.stringify(st));
    assert.ok(Date.now() < deadline, 'the scan did not complete in 90 s');
    await new Promise((r) => setTimeout(r, 250));
  }
}

function checkRate(r, what) {
  assert.ok(r && r.interval_95 && r.of > 0, `${what}: ${JSON.stringify(r)}`);
  assert.ok(r.interval_95.low <= r.value && r.value <= r.interval_95.high, `${what}: ${JSON.stringify(r)}`);
}

test('a 2025-11-25 session lists and calls every tool', async () => {
  const { client, transport } = await connect(process.env.AIVIS_KEY);
  try {
    assert.equal(transport.protocolVersion, '2025-11-25');
    assert.ok(transport.sessionId, 'no Mcp-Session-Id');
    assert.equal(client.getServerVersion().name, 'aivis');

    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'compare_scans', 'create_content_request', 'get_budget_status', 'get_change_lift', 'get_cited_sources',
      'get_content_request', 'get_scan', 'get_scan_figures', 'get_traffic', 'get_traffic_pages', 'get_visibility',
      'get_visibility_history', 'list_changes', 'list_content_requests', 'list_domains', 'record_change',
      'search_answers', 'start_scan',
    ]);
    for (const t of tools) {
      assert.equal(t.inputSchema.type, 'object', t.name);
      assert.equal(t.outputSchema.type, 'object', t.name);
    }

    const domains = await call(client, 'list_domains');
    assert.deepEqual(domains.items.map((d) => d.domain), [domain]);

    const first = await completedScan(client);
    const second = await completedScan(client);

    const vis = await call(client, 'get_visibility', { domain });
    assert.equal(vis.domain, domain);
    assert.equal(vis.last_scan.id, second);
    checkRate(vis.last_scan.breakdown.overall.mention_rate, 'get_visibility mention_rate');

    const hist = await call(client, 'get_visibility_history', { domain, limit: 1 });
    assert.equal(hist.items.length, 1);
    assert.equal(hist.has_more, true);

    const figs = await call(client, 'get_scan_figures', { scan_id: second });
    assert.equal(figs.status, 'completed');
    checkRate(figs.overall.citation_rate, 'get_scan_figures overall citation_rate');
    assert.equal(figs.engines[0].label, 'Fake');

    const cited = await call(client, 'get_cited_sources', { scan_id: second });
    assert.equal(cited.engines[0].label, 'Fake');
    assert.ok(Array.isArray(cited.cited_pages));

    const answers = await call(client, 'search_answers', { scan_id: second, q: 'Acme', mentioned: true });
    assert.ok(answers.items.length > 0);
    for (const a of answers.items) assert.ok(a.mentioned && a.text.includes('Acme'));

    const cmp = await call(client, 'compare_scans', { from_scan_id: first, to_scan_id: second });
    assert.equal(cmp.engines[0].label, 'Fake');
    checkRate(cmp.engines[0].mention_rate.from, 'compare_scans from');
    checkRate(cmp.engines[0].mention_rate.to, 'compare_scans to');

    const cr = await call(client, 'create_content_request', { domain, budget: 1.25, content: 'Acme makes rocket skates.' });
    assert.equal(cr.status, 'queued');
    assert.equal(cr.budget, 1.25);
    assert.equal((await call(client, 'get_content_request', { id: cr.id })).id, cr.id);
    assert.ok((await call(client, 'list_content_requests')).items.some((i) => i.id === cr.id));
    await refused(client, 'create_content_request', { domain, budget: 99999, content: 'Too dear.' }, 'BUDGET_EXCEEDS_TIER_LIMIT');

    const bs = await call(client, 'get_budget_status');
    assert.equal(bs.quota_tier, 'Enterprise');
    assert.equal(bs.budget.reserved, 1.25);

    // No logs were sent for the domain: no agent, and its pages are the
    // one the scans cite, crawled by none.
    const tr = await call(client, 'get_traffic', { domain });
    assert.deepEqual(tr.agents, []);
    assert.equal(tr.last_batch_at, null);
    const pages = (await call(client, 'get_traffic_pages', { domain })).items;
    assert.deepEqual(pages.map((p) => [p.page, p.crawls.length, p.cited_by[0].engine]), [['/skates', 0, 'Fake']]);
    await refused(client, 'get_traffic', { domain: 'not-monitored.example' }, 'NOT_FOUND');

    const change = await call(client, 'record_change', { domain, title: 'New pricing page', pages: ['/skates'] });
    assert.ok((await call(client, 'list_changes', { domain })).items.some((c) => c.id === change.id));
    const lift = await call(client, 'get_change_lift', { domain, change_id: change.id });
    assert.equal(lift.change.id, change.id);
    for (const m of lift.lift.overall.measures) assert.equal(m.difference.status, 'insufficient_data', m.metric);
  } finally {
    await transport.terminateSession();
    await client.close();
  }
});

test('a key without visibility:write cannot start a scan', async () => {
  const { client, transport } = await connect(process.env.AIVIS_READ_KEY);
  try {
    await refused(client, 'start_scan', { domain }, 'INSUFFICIENT_SCOPE');
  } finally {
    await transport.terminateSession();
    await client.close();
  }
});

test('no key: the client is refused', async () => {
  await assert.rejects(connect(''), /MISSING_CREDENTIALS/);
});
