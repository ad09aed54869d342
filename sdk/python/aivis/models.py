"""The resources of the aivis API as dataclasses.

Each class holds the properties of the schema of the same name in the
OpenAPI document (core/api/openapi.json); a test checks that they agree.
Nested objects stay dictionaries. A field the server sends that the class
does not know (a newer server's) is kept in ``extra``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Optional, Type, TypeVar

M = TypeVar("M", bound="Model")


@dataclass
class Model:
    """The base of every resource: every field is optional, none positional."""

    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls: Type[M], data: Dict[str, Any]) -> M:
        """Builds the resource from its JSON object."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        return cls(extra={k: v for k, v in data.items() if k not in names}, **known)

    def to_dict(self) -> Dict[str, Any]:
        """The resource as the JSON object it was read from."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out.update(self.extra)
        return out


@dataclass
class Event(Model):
    """An event, as a webhook delivers it and GET /v1/events lists it."""

    id: Optional[str] = None
    event: Optional[str] = None
    timestamp: Optional[str] = None
    data: Optional[Dict[str, Any]] = None

@dataclass
class BudgetStatus(Model):
    """Quota and budget status of the key's account. Rate limits, usage, budgets and active requests are the account's, shared by all its keys and clients."""

    quota_tier: Optional[str] = None
    rate_limits: Optional[Dict[str, Any]] = None
    usage: Optional[Dict[str, Any]] = None
    remaining: Optional[Dict[str, Any]] = None
    resets: Optional[Dict[str, Any]] = None
    budget: Optional[Dict[str, Any]] = None
    active_requests: Optional[Dict[str, Any]] = None
    account_id: Optional[str] = None
    client_id: Optional[str] = None

@dataclass
class ContentRequest(Model):
    """A request to analyse and optimize content for AI answers, with the budget it may spend. While it is processed, status, step and spent show its progress; once completed, result holds the analysis, the optimized text and the drafts (docs/content-requests.md)."""

    id: Optional[str] = None
    status: Optional[str] = None
    step: Optional[str] = None
    type: Optional[str] = None
    domain: Optional[str] = None
    url: Optional[str] = None
    content: Optional[str] = None
    target_queries: Optional[List[str]] = None
    client_id: Optional[str] = None
    currency: Optional[str] = None
    budget: Optional[float] = None
    spent: Optional[float] = None
    reserved: Optional[float] = None
    metadata: Optional[Dict[str, Any]] = None
    failure_reason: Optional[str] = None
    result: Optional[Dict[str, Any]] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    started_at: Optional[str] = None
    ended_at: Optional[str] = None

@dataclass
class VisibilityStatus(Model):
    """The latest reading of a domain, with its trend over 7 and 30 days and the breakdown of its last scan."""

    domain: Optional[str] = None
    visibility_score: Optional[int] = None
    sentiment: Optional[str] = None
    sentiment_score: Optional[float] = None
    measured_at: Optional[str] = None
    source: Optional[str] = None
    client_id: Optional[str] = None
    formula_version: Optional[int] = None
    trend: Optional[Dict[str, Any]] = None
    last_scan: Optional[Dict[str, Any]] = None

@dataclass
class VisibilityReading(Model):
    """How AI systems saw a domain at one moment: the newest reading of the domain."""

    domain: Optional[str] = None
    visibility_score: Optional[int] = None
    sentiment: Optional[str] = None
    sentiment_score: Optional[float] = None
    measured_at: Optional[str] = None
    source: Optional[str] = None
    client_id: Optional[str] = None
    formula_version: Optional[int] = None

@dataclass
class RecordedReading(Model):
    """The stored reading, and the ai_visibility_change event it caused if it changed the domain's latest score or sentiment (the first reading of a domain counts as a change)."""

    domain: Optional[str] = None
    visibility_score: Optional[int] = None
    sentiment: Optional[str] = None
    sentiment_score: Optional[float] = None
    measured_at: Optional[str] = None
    source: Optional[str] = None
    client_id: Optional[str] = None
    formula_version: Optional[int] = None
    changed: Optional[bool] = None
    event_id: Optional[str] = None

@dataclass
class Webhook(Model):
    """A webhook. secret is present only in the answers to create and rotate-secret: store it then."""

    id: Optional[str] = None
    domain: Optional[str] = None
    url: Optional[str] = None
    events: Optional[List[str]] = None
    min_score_change: Optional[int] = None
    min_citation_change: Optional[int] = None
    enabled: Optional[bool] = None
    disabled_reason: Optional[str] = None
    disabled_at: Optional[str] = None
    failing_since: Optional[str] = None
    client_id: Optional[str] = None
    secret: Optional[str] = None
    previous_secret_expires_at: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    deleted_at: Optional[str] = None

@dataclass
class Delivery(Model):
    """One event on its way to one webhook (webhook_id) or connection (connection_id)."""

    id: Optional[str] = None
    webhook_id: Optional[str] = None
    event_id: Optional[str] = None
    event: Optional[str] = None
    status: Optional[str] = None
    attempts: Optional[int] = None
    next_attempt_at: Optional[str] = None
    last_status_code: Optional[int] = None
    last_error: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    attempt_log: Optional[List[Dict[str, Any]]] = None
    connection_id: Optional[str] = None

@dataclass
class ReplayResult(Model):
    """ReplayResult"""

    scheduled: Optional[int] = None

@dataclass
class WebhookTestResult(Model):
    """WebhookTestResult"""

    event_id: Optional[str] = None

@dataclass
class ConnectorKind(Model):
    """A connector this server runs: a registered plugin, with the JSON Schema of its settings and the health of its process, on the instance that answered and on every instance of the server."""

    name: Optional[str] = None
    kind: Optional[str] = None
    display_name: Optional[str] = None
    description: Optional[str] = None
    version: Optional[str] = None
    settings_schema: Optional[Dict[str, Any]] = None
    secret_fields: Optional[List[str]] = None
    destination_fields: Optional[List[str]] = None
    health: Optional[Dict[str, Any]] = None
    instances: Optional[List[Dict[str, Any]]] = None

@dataclass
class Connection(Model):
    """Connection"""

    id: Optional[str] = None
    connector: Optional[str] = None
    name: Optional[str] = None
    settings: Optional[Dict[str, Any]] = None
    secret_fields: Optional[List[str]] = None
    events: Optional[List[str]] = None
    domains: Optional[List[str]] = None
    min_score_change: Optional[int] = None
    min_citation_change: Optional[int] = None
    enabled: Optional[bool] = None
    disabled_reason: Optional[str] = None
    disabled_at: Optional[str] = None
    failing_since: Optional[str] = None
    source: Optional[str] = None
    client_id: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None
    deleted_at: Optional[str] = None

@dataclass
class ConnectionTestResult(Model):
    """ConnectionTestResult"""

    event_id: Optional[str] = None
    result: Optional[str] = None
    reason: Optional[str] = None
    retry_after_seconds: Optional[float] = None
    latency_ms: Optional[float] = None

@dataclass
class ZapierSubscription(Model):
    """ZapierSubscription"""

    id: Optional[str] = None
    event: Optional[str] = None
    domain: Optional[str] = None
    created_at: Optional[str] = None

@dataclass
class MonitoredDomain(Model):
    """MonitoredDomain"""

    id: Optional[str] = None
    domain: Optional[str] = None
    brands: Optional[List[str]] = None
    aliases: Optional[List[str]] = None
    competitors: Optional[List[str]] = None
    topics: Optional[List[str]] = None
    prompts: Optional[List[str]] = None
    next_scan_at: Optional[str] = None
    last_scan_at: Optional[str] = None
    client_id: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None

@dataclass
class DomainPrompts(Model):
    """A monitored domain's prompts: the owner's own, and the generated ones the next scan asks after them."""

    domain_id: Optional[str] = None
    prompts: Optional[List[Dict[str, Any]]] = None
    generated: Optional[List[Dict[str, Any]]] = None
    max_prompts: Optional[int] = None
    prompt_set_id: Optional[str] = None

@dataclass
class Scan(Model):
    """A scan of a monitored domain."""

    id: Optional[str] = None
    domain: Optional[str] = None
    domain_id: Optional[str] = None
    trigger: Optional[str] = None
    status: Optional[str] = None
    attempts: Optional[int] = None
    result: Optional[Dict[str, Any]] = None
    error: Optional[str] = None
    client_id: Optional[str] = None
    created_at: Optional[str] = None
    started_at: Optional[str] = None
    finished_at: Optional[str] = None

@dataclass
class ScanAnswer(Model):
    """One answer behind a scan's figures, or a probe that failed (error set, no answer): what the engine said and what aivis read in it."""

    seq: Optional[int] = None
    prompt: Optional[Dict[str, Any]] = None
    run: Optional[int] = None
    engine: Optional[str] = None
    kind: Optional[str] = None
    text: Optional[str] = None
    error: Optional[str] = None
    error_category: Optional[str] = None
    error_status: Optional[int] = None
    sources_reported: Optional[bool] = None
    sources: Optional[List[Dict[str, Any]]] = None
    citations: Optional[List[Dict[str, Any]]] = None
    queries: Optional[List[str]] = None
    mentioned: Optional[bool] = None
    cited: Optional[bool] = None
    position: Optional[int] = None
    competitors: Optional[List[str]] = None
    sentences: Optional[List[Dict[str, Any]]] = None

@dataclass
class EventType(Model):
    """One kind of the event catalog."""

    kind: Optional[str] = None
    description: Optional[str] = None
    schema: Optional[Dict[str, Any]] = None
    example: Optional[Dict[str, Any]] = None

@dataclass
class Health(Model):
    """The process serves."""

    status: Optional[str] = None

@dataclass
class Readiness(Model):
    """Whether the server is ready to serve, and if not, which parts do not answer; if so, what it does without."""

    status: Optional[str] = None
    failing: Optional[List[str]] = None
    degraded: Optional[List[str]] = None

@dataclass
class ExportRecord(Model):
    """One line of an account's export: a row of one of the account's tables, or the end line."""

    kind: Optional[str] = None
    data: Optional[Dict[str, Any]] = None


@dataclass
class Page(Generic[M]):
    """One page of a list: its items, whether more follow, and the cursor of the next page."""

    items: List[M]
    has_more: bool
    next_cursor: Optional[str]


# What `from aivis.models import *` gives: the resources and Page.
__all__ = [n for n, v in list(globals().items()) if isinstance(v, type) and issubclass(v, Model)] + ["Page"]
