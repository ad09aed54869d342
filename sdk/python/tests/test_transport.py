"""The client's transport against a scripted HTTP server on loopback: credentials per interface,
the 429 waits when the server sends only a header or nothing, and failures without an envelope."""

import http.server
import json
import threading
import unittest

import aivis


class Script:
    """A server answering each request with the next scripted (status, headers, body), keeping what it got."""

    def __init__(self):
        self.answers, self.got = [], []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                outer.got.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                  self.rfile.read(n)))
                status, headers, body = outer.answers.pop(0)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def envelope_429(retry_after=None):
    err = {"code": "RATE_LIMIT_EXCEEDED", "message": "slow down", "request_id": "req_1"}
    if retry_after is not None:
        err["retry_after"] = retry_after
    return json.dumps({"success": False, "error": err}).encode()


class TransportTest(unittest.TestCase):
    def setUp(self):
        self.s = Script()
        self.slept = []
        self.c = aivis.Client(self.s.url, "svc_k", "sec", allow_http=True, sleep=self.slept.append)

    def tearDown(self):
        self.s.close()

    def test_credentials_per_interface(self):
        ok = (200, {}, b'{"success":true,"data":{"quota_tier":"Starter"}}')
        self.s.answers = [ok, (200, {}, b'{"items":[],"has_more":false,"next_cursor":null}'), (200, {}, b'{"status":"ok"}'),
                          (204, {}, b"")]
        self.assertEqual(self.c.get_budget_status().quota_tier, "Starter")
        self.assertEqual(list(self.c.list_webhooks()), [])
        self.assertEqual(self.c.get_health().status, "ok")
        self.assertIsNone(self.c.delete_webhook("wh 1/2"))
        (_, p1, h1, _), (_, p2, h2, _), (_, p3, h3, _), (m4, p4, _, _) = self.s.got
        self.assertEqual((p1, h1.get("x-api-key"), h1.get("x-api-secret"), h1.get("authorization")),
                         ("/api/v1/ai/budget-status", "svc_k", "sec", None))
        self.assertEqual((p2, h2.get("authorization"), h2.get("x-api-secret")), ("/v1/webhooks", "Bearer svc_k", None))
        self.assertEqual((p3, h3.get("authorization"), h3.get("x-api-key")), ("/healthz", None, None))
        self.assertEqual((m4, p4), ("DELETE", "/v1/webhooks/wh%201%2F2"))

    def test_base_url_with_a_path(self):
        # Behind a proxy that serves aivis under a path: each interface keeps its credentials.
        c = aivis.Client(self.s.url + "/aivis/", "svc_k", "sec", allow_http=True)
        self.s.answers = [(200, {}, b'{"success":true,"data":{"quota_tier":"Starter"}}'),
                          (200, {}, b'{"domain":"example.com","visibility_score":1}')]
        c.get_budget_status()
        c.get_visibility("example.com")
        (_, p1, h1, _), (_, p2, h2, _) = self.s.got
        self.assertEqual((p1, h1.get("x-api-secret"), h1.get("authorization")), ("/aivis/api/v1/ai/budget-status", "sec", None))
        self.assertEqual((p2, h2.get("authorization")), ("/aivis/v1/visibility?domain=example.com", "Bearer svc_k"))

    def test_bodies_and_idempotency_keys(self):
        self.s.answers = [(201, {}, b'{"id":"dom_1","domain":"example.com","new_field":1}')]
        d = self.c.create_domain("example.com", brands=["Acme"], idempotency_key="k-1")
        self.assertEqual((d.id, d.extra), ("dom_1", {"new_field": 1}))
        _, _, h, body = self.s.got[0]
        self.assertEqual((h["content-type"], h["idempotency-key"]), ("application/json", "k-1"))
        self.assertEqual(json.loads(body), {"domain": "example.com", "brands": ["Acme"]})

    def test_retry_waits(self):
        ok = (200, {}, b'{"status":"ok"}')
        cases = {
            "retry_after in the envelope": ([(429, {"Retry-After": "9"}, envelope_429(3)), ok], [3]),
            "the header alone": ([(429, {"Retry-After": "7"}, b"busy"), ok], [7]),
            "neither: 60 s": ([(429, {}, envelope_429()), ok], [60]),
        }
        for name, (answers, waits) in cases.items():
            with self.subTest(name):
                self.slept.clear()
                self.s.answers = list(answers)
                self.assertEqual(self.c.get_health().status, "ok")
                self.assertEqual(self.slept, waits)

    def test_gives_up_after_max_attempts(self):
        self.s.answers = [(429, {}, envelope_429(2))] * 3
        with self.assertRaises(aivis.RateLimitError) as cm:
            self.c.get_health()
        self.assertEqual((cm.exception.retry_after, cm.exception.request_id, self.slept), (2, "req_1", [2, 2]))
        self.assertEqual(len(self.s.got), 3)

    def test_failures_without_an_envelope(self):
        self.s.answers = [(502, {"X-Request-Id": "req_9"}, b"<html>bad gateway</html>"),
                          (404, {}, json.dumps({"success": False, "error": {"code": "NOT_FOUND", "message": "no",
                                                                            "request_id": "req_2"}}).encode())]
        with self.assertRaises(aivis.ServerError) as cm:
            self.c.get_health()
        self.assertEqual((cm.exception.status, cm.exception.code, cm.exception.request_id), (502, "HTTP_502", "req_9"))
        with self.assertRaises(aivis.NotFoundError) as cm:
            self.c.get_webhook("wh_1")
        self.assertEqual(str(cm.exception), "no (404 NOT_FOUND)")
        self.assertEqual(self.slept, [])

    def test_refuses_plain_http_unless_allowed(self):
        with self.assertRaises(ValueError):
            aivis.Client(self.s.url, "svc_k")
        with self.assertRaises(ValueError):
            aivis.Client("localhost:8443", "svc_k")


if __name__ == "__main__":
    unittest.main()
