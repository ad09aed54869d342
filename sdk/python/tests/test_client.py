"""Every operation of the client against a real aivis serve.

go test ./sdk/python starts the server and passes it here: AIVIS_URL,
AIVIS_CA_FILE (its certificate), AIVIS_KEY and AIVIS_SECRET (an Enterprise
account's key), AIVIS_LIMITED_KEY and AIVIS_LIMITED_SECRET (a Starter
account's, whose rate limit a test exhausts), AIVIS_AGENCY_KEY and
AIVIS_AGENCY_SECRET (an agency account's), AIVIS_CLIENT_KEY,
AIVIS_CLIENT_SECRET and AIVIS_CLIENT_ID (its client's key, and the client). The server has the
partner-chat and zapier connectors, a fake answer engine, no content
workers, and loopback targets allowed (the receiver below).
"""

import datetime
import gzip
import hashlib
import hmac
import http.server
import json
import os
import ssl
import threading
import time
import unittest
import urllib.error
import uuid

import aivis

from .test_openapi import OPENAPI, method_name

ENV = os.environ.get("AIVIS_URL")


def client(key=None, secret=None, **kw):
    return aivis.Client(os.environ["AIVIS_URL"], key or os.environ["AIVIS_KEY"],
                        secret or os.environ["AIVIS_SECRET"], ca_file=os.environ["AIVIS_CA_FILE"], **kw)


def wait_for(what, cond, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("not within %g s: %s" % (timeout, what))
        time.sleep(0.05)


class Receiver:
    """An HTTP endpoint on loopback that answers 200 and keeps every request (path, headers, raw body)."""

    def __init__(self):
        self.got = []
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with outer.lock:
                    outer.got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def at(self, path):
        with self.lock:
            return [(h, b) for p, h, b in self.got if p == path]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@unittest.skipUnless(ENV, "needs a running aivis: go test ./sdk/python runs these against one")
class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = client()
        cls.rx = Receiver()
        # Every method an operation has is called by some test here: each
        # call is noted, and once every test of the class has run, an
        # operation no test called fails it.
        cls.called, cls.ran, cls.originals = set(), 0, {}
        with open(OPENAPI, encoding="utf-8") as f:
            doc = json.load(f)
        cls.operations = {method_name(op["operationId"]) for item in doc["paths"].values()
                          for op in item.values() if isinstance(op, dict) and "operationId" in op}
        for name in cls.operations:
            original = getattr(aivis.Client, name)
            cls.originals[name] = original

            def noted(self, *args, _name=name, _original=original, **kw):
                ClientTest.called.add(_name)
                return _original(self, *args, **kw)
            noted.__name__ = name
            setattr(aivis.Client, name, noted)

    def setUp(self):
        ClientTest.ran += 1

    @classmethod
    def tearDownClass(cls):
        cls.rx.close()
        for name, original in cls.originals.items():
            setattr(aivis.Client, name, original)
        if cls.ran == len(unittest.defaultTestLoader.getTestCaseNames(cls)):
            missing = sorted(cls.operations - cls.called)
            if missing:
                raise AssertionError("operations no test called: %s" % ", ".join(missing))

    def check_replay(self, kind, id, domain, path):
        """Paused, a webhook or connection keeps an event as a failed delivery; enabled again, a replay sends it."""
        update, replay = getattr(self.c, "update_" + kind), getattr(self.c, "replay_%s_deliveries" % kind)
        deliveries = getattr(self.c, "list_%s_deliveries" % kind)
        since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.assertEqual(replay(id, since).scheduled, 0)  # nothing failed
        self.assertFalse(update(id, enabled=False).enabled)
        missed = self.c.record_visibility_reading(domain, 12, "negative")
        wait_for("the paused %s's failed delivery" % kind, lambda: [
            d for d in deliveries(id, status="failed") if d.event_id == missed.event_id])
        self.assertTrue(update(id, enabled=True).enabled)
        self.assertEqual(replay(id, since, idempotency_key=str(uuid.uuid4())).scheduled, 1)
        wait_for("the replayed event at the receiver", lambda: [
            h for h, _ in self.rx.at(path) if missed.event_id in (h.get("webhook-id"), h.get("idempotency-key"))])

    def test_unauthenticated(self):
        self.assertEqual(self.c.get_health().status, "ok")
        self.assertEqual(self.c.get_liveness().status, "ok")
        self.assertEqual(self.c.get_readiness().status, "ready")
        doc = self.c.get_open_api_document()
        self.assertTrue(doc["openapi"].startswith("3.1"))
        self.assertIn("/v1/webhooks", doc["paths"])

    def test_budget_status_and_errors(self):
        b = self.c.get_budget_status()
        self.assertEqual(b.quota_tier, "Enterprise")
        self.assertTrue(b.account_id.startswith("acct_") or b.account_id)
        self.assertEqual(b.budget.currency, "usd")
        self.assertEqual(b.rate_limits.per_minute, 300)
        self.assertIn("X-RateLimit-Remaining", self.c.last_rate_limit)
        # A wrong secret on the key-and-secret interface; a wrong key on the bearer one.
        with self.assertRaises(aivis.AuthenticationError) as cm:
            client(secret="x" * 64).get_budget_status()
        self.assertEqual((cm.exception.status, cm.exception.code), (401, "INVALID_CREDENTIALS"))
        self.assertTrue(cm.exception.request_id)
        with self.assertRaises(aivis.AuthenticationError):
            client(key="svc_" + "x" * 40).get_visibility("acme.example")
        with self.assertRaises(ValueError):
            aivis.Client("http://localhost:8443", "k")
        # The server's self-signed certificate, not trusted: urllib's error, reason the verification.
        with self.assertRaises(urllib.error.URLError) as cm:
            aivis.Client(os.environ["AIVIS_URL"], "k").get_health()
        self.assertIsInstance(cm.exception.reason, ssl.SSLCertVerificationError)

    def test_content_requests(self):
        key = str(uuid.uuid4())
        first = self.c.create_content_request("content.example", 0.5, content="Acme makes rocket skates.",
                                              metadata={"ref": "py"}, idempotency_key=key)
        self.assertIsInstance(first, aivis.ContentRequest)
        self.assertTrue(first.id.startswith("cr_"))
        self.assertEqual((first.status, first.budget, first.metadata), ("queued", 0.5, {"ref": "py"}))
        again = self.c.create_content_request("content.example", 0.5, content="Acme makes rocket skates.",
                                              metadata={"ref": "py"}, idempotency_key=key)
        self.assertEqual(again.id, first.id)
        with self.assertRaises(aivis.ConflictError) as cm:
            self.c.create_content_request("content.example", 0.75, idempotency_key=key)
        self.assertEqual(cm.exception.code, "IDEMPOTENCY_CONFLICT")
        second = self.c.create_content_request("content.example", 0.25, content="Skates.")
        self.assertEqual(self.c.get_content_request(first.id).id, first.id)
        # Paging: one a page, every item once, the newest first.
        ids = [r.id for r in self.c.list_content_requests(domain="content.example", limit=1)]
        self.assertEqual(ids, [second.id, first.id])
        page = self.c.page(self.c.list_content_requests, domain="content.example", limit=1)
        self.assertEqual(([r.id for r in page.items], page.has_more), ([second.id], True))
        page = self.c.page(self.c.list_content_requests, cursor=page.next_cursor, domain="content.example", limit=1)
        self.assertEqual(([r.id for r in page.items], page.has_more, page.next_cursor), ([first.id], False, None))
        cancelled = self.c.cancel_content_request(first.id)
        self.assertEqual(cancelled.status, "cancelled")
        # Only a completed request's result is published.
        with self.assertRaises(aivis.ConflictError) as cm:
            self.c.publish_content_request(first.id, "https://content.example/skates")
        self.assertEqual(cm.exception.code, "INVALID_STATE")
        self.assertEqual([r.id for r in self.c.list_content_requests(status="cancelled")], [first.id])
        with self.assertRaises(aivis.ValidationError) as cm:
            self.c.create_content_request("content.example", -1)
        self.assertEqual(cm.exception.code, "VALIDATION_ERROR")
        self.assertIn("budget", [d["field"] for d in cm.exception.details])
        with self.assertRaises(aivis.NotFoundError) as cm:
            self.c.get_content_request("cr_nope")
        self.assertEqual((cm.exception.status, cm.exception.code), (404, "NOT_FOUND"))
        with self.assertRaises(aivis.ValidationError):
            self.c.page(self.c.list_content_requests, cursor="not a cursor")

    def test_visibility(self):
        first = self.c.record_visibility_reading("vis.example", 61, "positive", sentiment_score=0.4)
        self.assertIsInstance(first, aivis.RecordedReading)
        self.assertEqual((first.domain, first.visibility_score, first.source), ("vis.example", 61, "api"))
        self.c.record_visibility_reading("vis.example", 70, "mixed", idempotency_key=str(uuid.uuid4()))
        now = self.c.get_visibility("vis.example")
        self.assertEqual((now.visibility_score, now.sentiment), (70, "mixed"))
        self.assertEqual([r.visibility_score for r in self.c.get_visibility_history("vis.example", limit=1)], [70, 61])
        rows = list(self.c.csv_rows(self.c.get_visibility_history, domain="vis.example"))
        score = rows[0].index("visibility_score")
        self.assertEqual([r[score] for r in rows[1:]], ["70", "61"])
        with self.assertRaises(aivis.NotFoundError):
            self.c.get_visibility("never.example")

    def test_webhooks(self):
        rx, c = self.rx, self.c
        hook = c.create_webhook("hook.example", ["ai_visibility_change"], rx.url + "/hook")
        self.assertTrue(hook.secret.startswith("whsec_"))
        # The setup's webhook_test reached the receiver, signed with the secret.
        [(h, body)] = rx.at("/hook")
        verifier = aivis.Verifier(hook.secret)
        self.assertEqual(verifier.verify(h, body)["event"], "webhook_test")
        with self.assertRaises(aivis.WebhookVerificationError):
            verifier.verify(h, body + b" ")
        self.assertIsNone(c.get_webhook(hook.id).secret)
        self.assertIn(hook.id, [w.id for w in c.list_webhooks(limit=1)])
        self.assertEqual(c.update_webhook(hook.id, min_score_change=5).min_score_change, 5)

        reading = c.record_visibility_reading("hook.example", 44, "neutral")
        wait_for("the reading's delivery", lambda: any(
            verifier.verify(h, b)["id"] == reading.event_id for h, b in rx.at("/hook")[1:]))
        test = c.test_webhook(hook.id)
        wait_for("the test delivery", lambda: any(json.loads(b)["id"] == test.event_id for _, b in rx.at("/hook")))
        deliveries = wait_for("the delivery log", lambda: [
            d for d in c.list_webhook_deliveries(hook.id, status="succeeded", limit=1) if d.event_id == reading.event_id])
        one = c.get_webhook_delivery(hook.id, deliveries[0].id)
        rows = list(c.csv_rows(c.list_webhook_deliveries, id=hook.id))
        self.assertIn(one.id, [r[rows[0].index("id")] for r in rows[1:]])
        self.assertEqual((one.event, one.status), ("ai_visibility_change", "succeeded"))
        n = len(rx.at("/hook"))
        c.redeliver_webhook_delivery(hook.id, one.id)
        wait_for("the redelivery", lambda: len(rx.at("/hook")) > n)
        self.check_replay("webhook", hook.id, "hook.example", "/hook")

        rotated = c.rotate_webhook_secret(hook.id, grace_period=3600)
        self.assertTrue(rotated.secret.startswith("whsec_"))
        self.assertNotEqual(rotated.secret, hook.secret)
        test = c.test_webhook(hook.id)
        h, body = wait_for("the test after the rotation", lambda: [
            (h, b) for h, b in rx.at("/hook") if json.loads(b)["id"] == test.event_id])[0]
        self.assertEqual(aivis.Verifier(rotated.secret).verify(h, body)["event"], "webhook_test")
        self.assertEqual(aivis.Verifier(hook.secret).verify(h, body)["event"], "webhook_test")

        c.delete_webhook(hook.id)
        self.assertIsNotNone(c.get_webhook(hook.id).deleted_at)
        self.assertNotIn(hook.id, [w.id for w in c.list_webhooks()])
        # An endpoint that does not answer 200: 422, nothing kept.
        with self.assertRaises(aivis.UnprocessableError) as cm:
            c.create_webhook("hook.example", ["ai_visibility_change"], "http://127.0.0.1:1/nothing")
        self.assertEqual(cm.exception.code, "WEBHOOK_VERIFICATION_FAILED")

    def test_connections(self):
        rx, c = self.rx, self.c
        kinds = {k.name: k for k in c.list_connectors()}
        self.assertIn("partner-chat", kinds)
        self.assertIn("webhook_url", kinds["partner-chat"].secret_fields)
        conn = c.create_connection("partner-chat", {"webhook_url": rx.url + "/chat", "username": "aivis"},
                                   ["ai_visibility_change"], domains=["conn.example"])
        self.assertEqual((conn.connector, conn.settings), ("partner-chat", {"username": "aivis"}))
        self.assertEqual(c.get_connection(conn.id).id, conn.id)
        self.assertIn(conn.id, [x.id for x in c.list_connections(limit=1)])
        self.assertEqual(c.update_connection(conn.id, name="Team chat").name, "Team chat")
        result = c.test_connection(conn.id)
        self.assertEqual(result.result, "delivered")
        reading = c.record_visibility_reading("conn.example", 33, "negative")
        deliveries = wait_for("the connection's delivery", lambda: [
            d for d in c.list_connection_deliveries(conn.id, status="succeeded", limit=1)
            if d.event_id == reading.event_id])
        one = c.get_connection_delivery(conn.id, deliveries[0].id)
        self.assertEqual(one.connection_id, conn.id)
        n = len(rx.at("/chat"))
        c.redeliver_connection_delivery(conn.id, one.id)
        wait_for("the redelivery", lambda: len(rx.at("/chat")) > n)
        self.check_replay("connection", conn.id, "conn.example", "/chat")
        c.delete_connection(conn.id)
        self.assertIsNotNone(c.get_connection(conn.id).deleted_at)
        self.assertNotIn(conn.id, [x.id for x in c.list_connections()])

    def test_zapier(self):
        sub = self.c.zapier_subscribe(self.rx.url + "/zap", "ai_visibility_change", domain="zap.example")
        self.assertEqual((sub.event, sub.domain), ("ai_visibility_change", "zap.example"))
        self.assertEqual(json.loads(self.rx.at("/zap")[0][1])["event"], "webhook_test")
        self.c.zapier_unsubscribe(sub.id)
        with self.assertRaises(aivis.NotFoundError):
            self.c.zapier_unsubscribe(sub.id)

    def test_events(self):
        a = self.c.record_visibility_reading("events.example", 10, "neutral")
        b = self.c.record_visibility_reading("events.example", 90, "positive")
        ids = [e.id for e in self.c.list_recent_events(event="ai_visibility_change")]
        self.assertIn(a.event_id, ids)
        self.assertIn(b.event_id, ids)
        self.assertLess(ids.index(b.event_id), ids.index(a.event_id))
        # One a page: the same events, page after page.
        self.assertEqual([e.id for e in self.c.list_recent_events(event="ai_visibility_change", limit=1)], ids)
        with self.assertRaises(aivis.ValidationError):
            self.c.page(self.c.list_recent_events, cursor="x")
        kinds = {t.kind: t for t in self.c.list_event_types()}
        self.assertIn("ai_visibility_change", kinds)
        self.assertEqual(kinds["ai_visibility_change"].example["event"], "ai_visibility_change")

    def test_domains_and_scans(self):
        c = self.c
        key = str(uuid.uuid4())
        d = c.create_domain("acme.example", brands=["Acme"], prompts=["Which rocket skates should I buy?"],
                            idempotency_key=key)
        # A retry with the same key is the first answer again (not 409 ALREADY_EXISTS); another body is refused.
        self.assertEqual(c.create_domain("acme.example", brands=["Acme"], prompts=["Which rocket skates should I buy?"],
                                         idempotency_key=key).id, d.id)
        with self.assertRaises(aivis.ConflictError) as cm:
            c.create_domain("other.example", idempotency_key=key)
        self.assertEqual(cm.exception.code, "IDEMPOTENCY_CONFLICT")
        self.assertIsInstance(d, aivis.MonitoredDomain)
        self.assertEqual(c.get_domain(d.id).domain, "acme.example")
        # Markets: a Market or a dictionary each, read back as Markets (the country upper case).
        m = c.update_domain(d.id, markets=[aivis.Market(country="de", language="de"), {"country": "AT", "language": "de"}]).markets
        self.assertEqual([(x.country, x.language) for x in m], [("DE", "de"), ("AT", "de")])
        self.assertIsInstance(m[0], aivis.Market)
        with self.assertRaises(aivis.ValidationError) as cm:
            c.update_domain(d.id, markets=[{"country": "XX", "language": "de"}])
        self.assertEqual(cm.exception.details[0]["field"], "markets[0]")
        self.assertEqual(c.update_domain(d.id, markets=[]).markets, [])
        self.assertIn(d.id, [x.id for x in c.list_domains(limit=1)])
        self.assertEqual(c.update_domain(d.id, competitors=["Globex"]).competitors, ["Globex"])
        self.assertEqual(c.get_domain_prompts(d.id).domain_id, d.id)
        put = c.put_domain_prompts(d.id, [{"text": "Which skates are best?"}])
        self.assertIn("Which skates are best?", [p.text for p in put.prompts])
        key = str(uuid.uuid4())
        scan = c.request_scan("acme.example", idempotency_key=key)
        self.assertTrue(scan.id)
        self.assertEqual(c.request_scan("acme.example", idempotency_key=key).id, scan.id)
        done = wait_for("the scan", lambda: (lambda s: s if s.status in ("completed", "failed") else None)(
            c.get_scan(scan.id)), timeout=60)
        self.assertEqual(done.status, "completed")
        answers = list(c.list_scan_answers(scan.id, limit=2))
        self.assertGreater(len(answers), 2)
        self.assertEqual(len({a.seq for a in answers}), len(answers))
        self.assertTrue(all(a.engine for a in answers))
        rows = list(c.csv_rows(c.list_scan_answers, id=scan.id))
        self.assertEqual(len(rows) - 1, len(answers))
        engines = list(c.csv_rows(c.get_scan, id=scan.id, table="engines"))
        self.assertGreaterEqual(len(engines), 2)
        c.delete_domain(d.id)
        with self.assertRaises(aivis.NotFoundError):
            c.get_domain(d.id)

    def test_changes(self):
        c = self.c
        d = c.create_domain("changes.example", brands=["Acme"], prompts=["Which rocket skates should I buy?"])
        at = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
        key = str(uuid.uuid4())
        made = c.create_change(d.id, "FAQ markup on /skates", notes="FAQPage JSON-LD", at=at,
                               pages=["https://changes.example/skates?utm=x"], prompts=["which rocket skates should I buy?"],
                               idempotency_key=key)
        self.assertIsInstance(made, aivis.Change)
        self.assertEqual((made.pages, made.prompts, made.content_request_id, made.lift_measured_at),
                         (["/skates"], ["Which rocket skates should I buy?"], None, None))
        self.assertEqual(c.create_change(d.id, "FAQ markup on /skates", notes="FAQPage JSON-LD", at=at,
                                         pages=["https://changes.example/skates?utm=x"],
                                         prompts=["which rocket skates should I buy?"], idempotency_key=key).id, made.id)
        with self.assertRaises(aivis.ValidationError) as cm:
            c.create_change(d.id, "x", pages=["https://elsewhere.example/"], prompts=["not a prompt of the domain"])
        self.assertEqual([x["field"] for x in cm.exception.details], ["pages[0]", "prompts[0]"])
        self.assertEqual(c.get_change(d.id, made.id).title, "FAQ markup on /skates")
        self.assertEqual([x.id for x in c.list_changes(d.id, from_=at - datetime.timedelta(minutes=1), limit=1)], [made.id])
        self.assertEqual(list(c.list_changes(d.id, to=at - datetime.timedelta(minutes=1))), [])
        # No scan after the change: no figure, and how many scans a verdict needs.
        lift = c.get_change_lift(d.id, made.id, scans=4, effect=0.25)
        self.assertIsInstance(lift, aivis.ChangeLift)
        self.assertEqual((lift.change.id, lift.lift.scans, lift.lift.after.scans), (made.id, 4, 0))
        citation = [m for m in lift.lift.overall.measures if m.metric == "citation_rate"][0]
        self.assertIsInstance(citation.difference, aivis.LiftDiff)
        self.assertEqual((citation.difference.status, citation.difference.estimate, citation.difference.effect),
                         ("insufficient_data", None, 0.25))
        with self.assertRaises(aivis.ValidationError) as cm:
            c.get_change_lift(d.id, made.id, effect=1.5)
        self.assertEqual(cm.exception.details[0]["field"], "effect")
        c.delete_change(d.id, made.id)
        with self.assertRaises(aivis.NotFoundError):
            c.get_change(d.id, made.id)
        c.delete_domain(d.id)

    def test_traffic(self):
        c = self.c
        d = c.create_domain("traffic.example")
        gptbot = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; GPTBot/1.3; +https://openai.com/gptbot"
        claude = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)"
        now = datetime.datetime.now(datetime.timezone.utc)
        today = now.strftime("%Y-%m-%d")
        cf = c.create_ingest_token(d.id, "edge", "cloudflare", idempotency_key=str(uuid.uuid4()))
        self.assertIsInstance(cf, aivis.CreatedIngestToken)
        self.assertTrue(cf.token.startswith("aivt_"))
        fastly = c.create_ingest_token(d.id, "fastly", "fastly")
        vercel = c.create_ingest_token(d.id, "drain", "vercel", signing_secret="drain-secret")

        self.assertEqual(c.get_fastly_challenge(), "*")
        verified, echoed = c.verify_vercel_drain("code-1")
        self.assertTrue(verified.verified)
        self.assertEqual(echoed, "code-1")
        cf_batch = json.dumps({"ClientIP": "52.230.152.7", "ClientRequestHost": "traffic.example", "ClientRequestMethod": "GET",
                               "ClientRequestPath": "/pricing", "ClientRequestURI": "/pricing", "ClientRequestUserAgent": gptbot,
                               "ClientRequestReferer": "", "EdgeResponseStatus": 200, "EdgeResponseBytes": 5000,
                               "EdgeStartTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ")}).encode() + b"\n"
        kept = c.ingest_cloudflare(cf.token, cf_batch)
        self.assertEqual((kept.lines, kept.malformed, kept.duplicate), (1, 0, False))
        self.assertTrue(c.ingest_cloudflare(cf.token, gzip.compress(cf_batch)).duplicate)
        fs_batch = json.dumps({"timestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "client_ip": "198.51.100.4", "method": "GET",
                               "url": "/docs", "status": 404, "bytes": 10, "referer": "", "user_agent": claude}).encode()
        self.assertEqual(c.ingest_fastly(fastly.token, fs_batch).lines, 1)
        ms = int(now.timestamp() * 1000)
        vc_batch = json.dumps([{"id": "1", "timestamp": ms, "source": "static", "proxy": {
            "timestamp": ms, "method": "GET", "host": "traffic.example", "path": "/blog", "userAgent": ["Mozilla/5.0 Chrome/131"],
            "referer": "https://www.perplexity.ai/", "statusCode": 200, "clientIp": "192.0.2.2"}}]).encode()
        sig = hmac.new(b"drain-secret", vc_batch, hashlib.sha1).hexdigest()
        self.assertEqual(c.ingest_vercel(vercel.token, vc_batch, sig).lines, 1)
        with self.assertRaises(aivis.UnprocessableError) as cm:
            c.ingest_vercel(vercel.token, vc_batch, "0" * 40)
        self.assertEqual(cm.exception.code, "WEBHOOK_VERIFICATION_FAILED")

        stamp = now.strftime("%d/%b/%Y:00:00:00 +0000")
        log = ('52.230.152.8 - - [%s] "GET /pricing HTTP/1.1" 500 0 "-" "%s"\nnot a log line\n' % (stamp, gptbot)).encode()
        up = c.upload_traffic_logs(d.id, gzip.compress(log), idempotency_key=str(uuid.uuid4()))
        self.assertEqual((up.lines, up.malformed, len(up.malformed_samples)), (2, 1, 1))
        self.assertTrue(c.upload_traffic_logs(d.id, log).duplicate)

        t = c.get_traffic(d.id, from_=today, to=today)
        self.assertEqual((t.first_day, t.last_day), (today, today))
        self.assertEqual([(a.agent, a.hits, a.by_verification.verified) for a in t.agents], [("GPTBot", 2, 2), ("ClaudeBot", 1, 0)])
        self.assertEqual(t.agents[0].status["5xx"], 1)
        self.assertEqual(sorted((p.page, p.agent, p.status) for p in t.problems),
                         [("/docs", "ClaudeBot", "4xx"), ("/pricing", "GPTBot", "5xx")])
        self.assertEqual([(r.assistant, r.visits) for r in t.referrals], [("perplexity", 1)])
        with self.assertRaises(aivis.ValidationError) as cm:
            c.get_traffic(d.id, to="tomorrow")
        self.assertEqual(cm.exception.details[0]["field"], "to")
        pages = list(c.list_traffic_pages(d.id, limit=1))
        self.assertEqual([p.page for p in pages], ["/blog", "/docs", "/pricing"])
        self.assertEqual([(h.agent, h.hits, h.errors) for h in pages[2].crawls], [("GPTBot", 2, 1)])
        rows = list(c.csv_rows(c.list_traffic_pages, id=d.id))
        self.assertEqual(rows[0][:3], ["page", "crawler_hits", "crawler_errors"])
        self.assertEqual([r[0] for r in rows[1:]], ["/blog", "/docs", "/pricing"])

        self.assertEqual(sorted(x.name for x in c.list_ingest_tokens(d.id)), ["drain", "edge", "fastly"])
        c.revoke_ingest_token(d.id, cf.id)
        with self.assertRaises(aivis.AuthenticationError):
            c.ingest_cloudflare(cf.token, cf_batch)
        self.assertIsNotNone([x for x in c.list_ingest_tokens(d.id) if x.id == cf.id][0].revoked_at)
        gpt = [k for k in c.list_crawlers() if k.token == "GPTBot"][0]
        self.assertTrue(any(lst.loaded and lst.prefixes > 0 for lst in gpt.lists))
        c.delete_domain(d.id)

    def test_usage(self):
        """The key's requests per hour reach the store within its counter's flush; pages and CSV agree."""
        def mine():
            counted = [u for u in self.c.list_usage(limit=1) if u.requests]
            if not counted:
                time.sleep(0.25)  # within the account's rate limit
            return counted
        counts = wait_for("the key's requests counted", mine)
        hour = datetime.datetime.now(datetime.timezone.utc).replace(minute=0, second=0, microsecond=0)
        for u in counts:
            self.assertTrue(u.key_hint.startswith("svc_"), u)
            self.assertIsNone(u.client_id)
            self.assertLessEqual(datetime.datetime.fromisoformat(u.hour.replace("Z", "+00:00")), hour)
        key = counts[0].key_id
        self.assertEqual(list(self.c.list_usage(from_=hour + datetime.timedelta(hours=1))), [])
        self.assertEqual([u.key_id for u in self.c.list_usage(from_=hour - datetime.timedelta(days=1), key_id=key)],
                         [u.key_id for u in counts if u.key_id == key])
        rows = list(self.c.csv_rows(self.c.list_usage, key_id=key, from_=hour - datetime.timedelta(days=1)))
        self.assertEqual(rows[0], ["hour", "key_id", "key_name", "key_hint", "client_id", "requests"])
        self.assertTrue(rows[1:] and all(r[1] == key and int(r[5]) >= 1 for r in rows[1:]), rows)
        with self.assertRaises(aivis.ValidationError) as cm:
            self.c.page(self.c.list_usage, from_="yesterday")
        self.assertEqual(cm.exception.details[0]["field"], "from")

    def test_export(self):
        self.c.record_visibility_reading("export.example", 50, "neutral")
        records = list(self.c.export_account())
        self.assertLessEqual({"accounts", "visibility_readings"}, {r.kind for r in records})
        self.assertEqual(records[-1].kind, "end")
        self.assertIn("export.example", [r.data.get("domain") for r in records if r.kind == "visibility_readings"])

    def test_agency_and_client(self):
        """An agency's key acts for a client with client_id; the client's key sees its own alone."""
        agency = client(os.environ["AIVIS_AGENCY_KEY"], os.environ["AIVIS_AGENCY_SECRET"])
        own = client(os.environ["AIVIS_CLIENT_KEY"], os.environ["AIVIS_CLIENT_SECRET"])
        cid = os.environ["AIVIS_CLIENT_ID"]
        self.assertEqual(own.get_budget_status().client_id, cid)
        reading = own.record_visibility_reading("agency.example", 55, "positive")
        self.assertEqual(reading.client_id, cid)
        self.assertEqual(agency.get_visibility("agency.example", client_id=cid).visibility_score, 55)
        d = agency.create_domain("client.example", client_id=cid)
        self.assertEqual(d.client_id, cid)
        self.assertIn(d.id, [x.id for x in own.list_domains()])
        self.assertIn(d.id, [x.id for x in agency.list_domains(client_id=cid)])
        mine = agency.create_domain("agency-own.example")
        self.assertNotIn(mine.id, [x.id for x in own.list_domains()])
        with self.assertRaises(aivis.NotFoundError):
            own.get_domain(mine.id)
        cr = own.create_content_request("agency.example", 1)
        self.assertEqual(cr.client_id, cid)
        self.assertIn(cr.id, [r.id for r in agency.list_content_requests(client_id=cid)])
        own.cancel_content_request(cr.id)

    def test_rate_limit_retry(self):
        """The Starter account's 60 a minute, spent; the retry waits what the server says."""
        key, secret = os.environ["AIVIS_LIMITED_KEY"], os.environ["AIVIS_LIMITED_SECRET"]
        for _ in range(3):  # should a minute end in between, spend the next one
            once = client(key, secret, max_attempts=1)
            for _ in range(200):
                try:
                    once.get_budget_status()
                except aivis.RateLimitError as e:
                    refused = e
                    break
            else:
                self.fail("200 requests of a Starter key were never refused")
            self.assertEqual((refused.status, refused.code), (429, "RATE_LIMIT_EXCEEDED"))
            self.assertTrue(1 <= refused.retry_after <= 60, refused.retry_after)
            slept = []
            retrying = client(key, secret, max_attempts=3, sleep=slept.append)
            try:
                retrying.get_budget_status()
            except aivis.RateLimitError as e:
                self.assertEqual(len(slept), 2)
                self.assertTrue(all(abs(s - e.retry_after) <= 1 for s in slept), (slept, e.retry_after))
                return
        self.fail("the retrying client was never refused")


if __name__ == "__main__":
    unittest.main()
