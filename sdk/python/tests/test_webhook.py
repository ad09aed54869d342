"""Webhook verification, against the Standard Webhooks reference vector and signatures made here."""

import base64
import json
import unittest

from aivis import Verifier, WebhookVerificationError, parse_secret, sign

# The test vector of the Standard Webhooks specification's libraries.
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="

OTHER = "whsec_" + base64.b64encode(bytes(range(32))).decode()


def headers(msg_id, ts, sig):
    return {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": sig}


class VerifierTest(unittest.TestCase):
    def test_reference_vector(self):
        self.assertEqual(sign(VECTOR_SECRET, VECTOR_ID, VECTOR_TS, VECTOR_BODY), VECTOR_SIG)
        v = Verifier(VECTOR_SECRET, now=lambda: VECTOR_TS)
        self.assertEqual(v.verify(headers(VECTOR_ID, VECTOR_TS, VECTOR_SIG), VECTOR_BODY), {"test": 2432232314})
        # Header names in any case, as frameworks hand them over.
        self.assertEqual(v.verify({"Webhook-Id": VECTOR_ID, "Webhook-Timestamp": str(VECTOR_TS),
                                   "Webhook-Signature": VECTOR_SIG}, VECTOR_BODY), {"test": 2432232314})

    def test_refusals(self):
        v = Verifier(VECTOR_SECRET, now=lambda: VECTOR_TS)
        cases = {
            "another body": (headers(VECTOR_ID, VECTOR_TS, VECTOR_SIG), b'{"test": 2432232315}', "no signature"),
            "another id": (headers("msg_other", VECTOR_TS, VECTOR_SIG), VECTOR_BODY, "no signature"),
            "a v2 signature": (headers(VECTOR_ID, VECTOR_TS, "v2," + VECTOR_SIG[3:]), VECTOR_BODY, "no signature"),
            "no signature": (headers(VECTOR_ID, VECTOR_TS, ""), VECTOR_BODY, "missing"),
            "a bad timestamp": (headers(VECTOR_ID, "soon", VECTOR_SIG), VECTOR_BODY, "not a number"),
        }
        for name, (h, body, why) in cases.items():
            with self.subTest(name):
                with self.assertRaisesRegex(WebhookVerificationError, why):
                    v.verify(h, body)

    def test_tolerance(self):
        body = b'{"id":"evt_1"}'
        sig = sign(OTHER, "evt_1", 1000, body)
        for now, ok in ((1300, True), (700, True), (1301, False), (699, False)):
            with self.subTest(now=now):
                v = Verifier(OTHER, now=lambda: now)
                if ok:
                    self.assertEqual(v.verify(headers("evt_1", 1000, sig), body), {"id": "evt_1"})
                else:
                    with self.assertRaisesRegex(WebhookVerificationError, "timestamp"):
                        v.verify(headers("evt_1", 1000, sig), body)

    def test_rotation(self):
        # During a rotation a delivery carries one signature per secret;
        # a receiver with either secret accepts it, one with neither does not.
        body = json.dumps({"id": "evt_2"}).encode()
        both = sign(OTHER, "evt_2", 50, body) + " " + sign(VECTOR_SECRET, "evt_2", 50, body)
        for secret in (OTHER, VECTOR_SECRET):
            self.assertEqual(Verifier(secret, now=lambda: 50).verify(headers("evt_2", 50, both), body), {"id": "evt_2"})
        third = "whsec_" + base64.b64encode(b"x" * 32).decode()
        with self.assertRaises(WebhookVerificationError):
            Verifier(third, now=lambda: 50).verify(headers("evt_2", 50, both), body)
        self.assertEqual(Verifier(third, OTHER, now=lambda: 50).verify(headers("evt_2", 50, both), body)["id"], "evt_2")

    def test_secrets(self):
        self.assertEqual(parse_secret(" " + OTHER + "\n"), bytes(range(32)))
        self.assertEqual(parse_secret(OTHER[len("whsec_"):]), bytes(range(32)))
        for bad in ("whsec_not base64!", "whsec_" + base64.b64encode(b"short").decode(), ""):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError) as cm:
                    parse_secret(bad)
                self.assertNotIn(bad.strip() or "\0", str(cm.exception))
        with self.assertRaises(ValueError):
            Verifier()


if __name__ == "__main__":
    unittest.main()
