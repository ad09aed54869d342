"""Verification of aivis's webhook deliveries (Standard Webhooks).

A delivery carries ``webhook-id``, ``webhook-timestamp`` and
``webhook-signature``: space-separated ``v1,<base64 HMAC-SHA256>`` entries,
one per signing secret, of ``{id}.{timestamp}.{body}`` under the key that
is the base64 after ``whsec_``. :class:`Verifier` accepts a delivery when
one entry matches under one of its secrets and the timestamp is within the
tolerance (5 minutes) of the clock; docs/webhooks.md describes the scheme.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Callable, Dict, Mapping, Union

SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE = 300


class WebhookVerificationError(Exception):
    """A delivery that does not verify; the message says why, never a secret."""


def parse_secret(secret: str) -> bytes:
    """The key of a secret: ``whsec_`` and standard base64 (or the base64 alone), 24 to 64 bytes."""
    text = secret.strip()
    if text.startswith(SECRET_PREFIX):
        text = text[len(SECRET_PREFIX):]
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the secret is not whsec_ followed by base64") from None
    if not 24 <= len(key) <= 64:
        raise ValueError("the secret's key is %d bytes; it must be 24 to 64" % len(key))
    return key


def _sign(key: bytes, msg_id: str, timestamp: int, body: bytes) -> bytes:
    return hmac.new(key, b"%s.%d.%s" % (msg_id.encode("utf-8"), timestamp, body), hashlib.sha256).digest()


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` entry aivis sends for this delivery under secret."""
    return "v1," + base64.b64encode(_sign(parse_secret(secret), msg_id, timestamp, body)).decode("ascii")


class Verifier:
    """Checks deliveries against one or more secrets (two during a rotation)."""

    def __init__(self, *secrets: str, tolerance: int = DEFAULT_TOLERANCE,
                 now: Callable[[], float] = time.time):
        if not secrets:
            raise ValueError("no secret")
        self._keys = [parse_secret(s) for s in secrets]
        self.tolerance = tolerance
        self._now = now

    def verify(self, headers: Mapping[str, str], body: Union[bytes, str]) -> Dict[str, Any]:
        """Verifies a delivery (its headers, any case, and the raw body) and returns its event.

        Raises WebhookVerificationError for missing or malformed headers, a
        timestamp outside the tolerance, or no matching signature.
        """
        if isinstance(body, str):
            body = body.encode("utf-8")
        h = {k.lower(): v for k, v in headers.items()}
        msg_id, ts_text, sigs = h.get("webhook-id"), h.get("webhook-timestamp"), h.get("webhook-signature")
        if not msg_id or not ts_text or not sigs:
            raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature")
        if not ts_text.isascii() or not ts_text.lstrip("-").isdigit():
            raise WebhookVerificationError("webhook-timestamp is not a number of seconds")
        ts = int(ts_text)
        now = int(self._now())
        if ts < now - self.tolerance:
            raise WebhookVerificationError("the timestamp is too old")
        if ts > now + self.tolerance:
            raise WebhookVerificationError("the timestamp is too far in the future")
        for key in self._keys:
            want = base64.b64encode(_sign(key, msg_id, ts, body)).decode("ascii")
            for entry in sigs.split():
                version, _, value = entry.partition(",")
                if version == "v1" and hmac.compare_digest(value.encode("ascii", "replace"), want.encode("ascii")):
                    return json.loads(body.decode("utf-8"))
        raise WebhookVerificationError("no signature matches")
