"""Errors of the aivis API, one class per kind of failure.

Every failure the service answers is the envelope
``{"success": false, "error": {"code", "message", "request_id", ["retry_after"], ["details"]}}``;
:func:`from_response` turns it into the class for its status, carrying
every field of it.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional


class AivisError(Exception):
    """A failure answered by the service (or a response that was not its envelope)."""

    def __init__(self, status: int, code: str, message: str, request_id: Optional[str] = None,
                 retry_after: Optional[int] = None, details: Optional[List[Dict[str, str]]] = None):
        super().__init__("%s (%d %s)" % (message, status, code))
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id
        self.retry_after = retry_after
        self.details = details or []


class ValidationError(AivisError):
    """400: a malformed body (INVALID_JSON) or a field that breaks a rule (VALIDATION_ERROR, see details)."""


class AuthenticationError(AivisError):
    """401: MISSING_CREDENTIALS, INVALID_CREDENTIALS, KEY_EXPIRED, KEY_REVOKED."""


class BudgetError(AivisError):
    """402 MONTHLY_BUDGET_EXCEEDED."""


class ForbiddenError(AivisError):
    """403: INSUFFICIENT_SCOPE, PLAN_NOT_ALLOWED, HTTPS_REQUIRED."""


class NotFoundError(AivisError):
    """404 NOT_FOUND (also another tenant's resource)."""


class ConflictError(AivisError):
    """409: IDEMPOTENCY_CONFLICT, INVALID_STATE, ALREADY_EXISTS."""


class PayloadError(AivisError):
    """413 PAYLOAD_TOO_LARGE, 415 UNSUPPORTED_MEDIA_TYPE."""


class UnprocessableError(AivisError):
    """422: BUDGET_EXCEEDS_TIER_LIMIT, WEBHOOK_VERIFICATION_FAILED, the *_LIMIT_REACHED codes."""


class RateLimitError(AivisError):
    """429: RATE_LIMIT_EXCEEDED, ACTIVE_REQUEST_LIMIT_EXCEEDED; retry_after is the wait in seconds."""


class ServerError(AivisError):
    """5xx: INTERNAL_ERROR, SERVICE_UNAVAILABLE, RATE_LIMIT_UNAVAILABLE, CONNECTOR_UNAVAILABLE."""


_BY_STATUS = {400: ValidationError, 401: AuthenticationError, 402: BudgetError, 403: ForbiddenError,
              404: NotFoundError, 409: ConflictError, 413: PayloadError, 415: PayloadError,
              422: UnprocessableError, 429: RateLimitError}


def from_response(status: int, body: bytes, retry_after_header: Optional[str] = None,
                  request_id_header: Optional[str] = None) -> AivisError:
    """The error of a failed response: its envelope's fields, in the class of its status."""
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else AivisError)
    try:
        err = json.loads(body.decode("utf-8"))["error"]
        if not isinstance(err, dict) or not isinstance(err.get("code"), str):
            raise ValueError
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        err = {"code": "HTTP_%d" % status, "message": "the service answered %d without an error envelope" % status}
    retry_after: Any = err.get("retry_after")
    if retry_after is None and retry_after_header and retry_after_header.strip().isdigit():
        retry_after = int(retry_after_header.strip())
    return cls(status, err["code"], str(err.get("message", "")), err.get("request_id") or request_id_header,
               retry_after, err.get("details"))
