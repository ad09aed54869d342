"""aivis: a client of the aivis API, on Python's standard library alone.

    import aivis
    c = aivis.Client("https://localhost:8443", key="svc_...", secret="...", ca_file="aivis-data/tls/cert.pem")
    print(c.get_budget_status().quota_tier)
    for w in c.list_webhooks():
        print(w.id, w.url)
"""

from .client import Client, __version__
from .errors import (AivisError, AuthenticationError, BudgetError, ConflictError, ForbiddenError, NotFoundError,
                     PayloadError, RateLimitError, ServerError, UnprocessableError, ValidationError)
from .models import *  # noqa: F401,F403 (the resources)
from .models import Model, Page
from .webhook import Verifier, WebhookVerificationError, parse_secret, sign

__all__ = ["Client", "__version__", "AivisError", "AuthenticationError", "BudgetError", "ConflictError",
           "ForbiddenError", "NotFoundError", "PayloadError", "RateLimitError", "ServerError", "UnprocessableError",
           "ValidationError", "Model", "Page", "Verifier", "WebhookVerificationError", "parse_secret", "sign"]
