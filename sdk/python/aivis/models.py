"""The resources of the aivis API as dataclasses.

Each class holds the properties of the schema of the same name in the
OpenAPI document (core/api/openapi.json); a test checks that they agree.
A property that is another object schema of the document is that class
(a list of them, for an array); other objects stay dictionaries (such as a
scan's breakdown figures and an event's data). A field the server sends
that the class does not know (a newer server's) is kept in ``extra``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Optional, Tuple, Type, TypeVar

M = TypeVar("M", bound="Model")


@dataclass
class Model:
    """The base of every resource: every field is optional, none positional."""

    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls: Type[M], data: Dict[str, Any]) -> M:
        """Builds the resource from its JSON object."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        nested = _NESTED.get(cls, {})
        known = {}
        for k, v in data.items():
            if k in nested and v is not None:
                sub, is_list = nested[k]
                v = [sub.from_dict(x) for x in v] if is_list else sub.from_dict(v)
            if k in names:
                known[k] = v
        return cls(extra={k: v for k, v in data.items() if k not in names}, **known)

    def to_dict(self) -> Dict[str, Any]:
        """The resource as a JSON object (a field the server did not send is None)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Model):
                v = v.to_dict()
            elif isinstance(v, list):
                v = [x.to_dict() if isinstance(x, Model) else x for x in v]
            out[f.name] = v
        out.update(out.pop("extra"))
        return out


_NESTED: Dict[type, Dict[str, Tuple[type, bool]]] = {}


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
    rate_limits: Optional[RateLimits] = None
    usage: Optional[RequestUsage] = None
    remaining: Optional[RemainingRequests] = None
    resets: Optional[WindowResets] = None
    budget: Optional[Budget] = None
    active_requests: Optional[ActiveRequests] = None
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
    result: Optional[ContentResult] = None
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
    last_scan: Optional[ScanSummary] = None


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
    market: Optional[Market] = None


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
    min_crawler_errors: Optional[int] = None
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
    attempt_log: Optional[List[DeliveryAttempt]] = None
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
    instances: Optional[List[ConnectorInstance]] = None


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
    min_crawler_errors: Optional[int] = None
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
class Market(Model):
    """Where, and in which language, a domain is scanned: an ISO 3166-1 alpha-2 country and a BCP 47 language."""

    country: Optional[str] = None
    language: Optional[str] = None


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
    markets: Optional[List[Market]] = None
    next_scan_at: Optional[str] = None
    last_scan_at: Optional[str] = None
    client_id: Optional[str] = None
    created_at: Optional[str] = None
    updated_at: Optional[str] = None


@dataclass
class DomainPrompts(Model):
    """A monitored domain's prompts: the owner's own, and the generated ones the next scan asks after them."""

    domain_id: Optional[str] = None
    prompts: Optional[List[Prompt]] = None
    generated: Optional[List[Prompt]] = None
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
    sources: Optional[List[AnswerSource]] = None
    citations: Optional[List[AnswerCitation]] = None
    queries: Optional[List[str]] = None
    mentioned: Optional[bool] = None
    cited: Optional[bool] = None
    position: Optional[int] = None
    competitors: Optional[List[str]] = None
    sentences: Optional[List[AnswerSentence]] = None
    surface: Optional[str] = None
    market: Optional[Market] = None
    absent: Optional[bool] = None


@dataclass
class UsageCount(Model):
    """The requests one key made in one UTC hour."""

    hour: Optional[str] = None
    key_id: Optional[str] = None
    key_name: Optional[str] = None
    key_hint: Optional[str] = None
    client_id: Optional[str] = None
    requests: Optional[int] = None


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
class RateLimits(Model):
    """The tier's request limits per window."""

    per_minute: Optional[int] = None
    per_hour: Optional[int] = None
    per_day: Optional[int] = None


@dataclass
class RequestUsage(Model):
    """The account's requests in the current windows, on both interfaces, all keys together."""

    requests_today: Optional[int] = None
    requests_this_hour: Optional[int] = None
    requests_this_minute: Optional[int] = None


@dataclass
class RemainingRequests(Model):
    """Each window's limit minus its usage, never below 0."""

    today: Optional[int] = None
    this_hour: Optional[int] = None
    this_minute: Optional[int] = None


@dataclass
class WindowResets(Model):
    """When each window ends, as Unix timestamps."""

    minute: Optional[int] = None
    hour: Optional[int] = None
    day: Optional[int] = None


@dataclass
class Budget(Model):
    """The account's budget for the current UTC calendar month."""

    currency: Optional[str] = None
    month: Optional[str] = None
    monthly_limit: Optional[float] = None
    spent: Optional[float] = None
    reserved: Optional[float] = None
    committed: Optional[float] = None
    remaining: Optional[float] = None
    max_per_request: Optional[float] = None
    resets_at: Optional[str] = None


@dataclass
class ActiveRequests(Model):
    """Active content requests against the tier's limit."""

    limit: Optional[int] = None
    current: Optional[int] = None


@dataclass
class ContentResult(Model):
    """What a completed content request produced. The scores and findings follow the rubric of docs/content-requests.md."""

    score_before: Optional[int] = None
    score_after: Optional[int] = None
    analysis: Optional[ContentAnalysis] = None
    analysis_after: Optional[ContentAnalysis] = None
    original_text: Optional[str] = None
    optimized_text: Optional[str] = None
    diff: Optional[str] = None
    flags: Optional[List[ContentFlag]] = None
    drafts: Optional[ContentDrafts] = None
    source: Optional[ContentSource] = None
    engine: Optional[str] = None
    charges: Optional[List[ContentCharge]] = None
    budget_exhausted: Optional[bool] = None
    stopped_before: Optional[str] = None
    notes: Optional[List[str]] = None


@dataclass
class ContentAnalysis(Model):
    """The rubric applied to a text: its score, its parts and what it lacks."""

    score: Optional[int] = None
    parts: Optional[List[Dict[str, Any]]] = None
    penalty: Optional[int] = None
    words: Optional[int] = None
    findings: Optional[List[ContentFinding]] = None


@dataclass
class ContentFinding(Model):
    """A shortfall of the text, the points it costs and its fix."""

    id: Optional[str] = None
    severity: Optional[str] = None
    points_lost: Optional[int] = None
    title: Optional[str] = None
    fix: Optional[str] = None
    evidence: Optional[str] = None


@dataclass
class ContentFlag(Model):
    """Something the AI engine wrote that the original does not hold, replaced by a placeholder."""

    kind: Optional[str] = None
    value: Optional[str] = None
    placeholder: Optional[str] = None


@dataclass
class ContentDrafts(Model):
    """Markup the page could add."""

    faq: Optional[List[Dict[str, Any]]] = None
    faq_json_ld: Optional[Dict[str, Any]] = None
    llms_txt_entry: Optional[str] = None
    source: Optional[str] = None


@dataclass
class ContentSource(Model):
    """What was analysed."""

    kind: Optional[str] = None
    url: Optional[str] = None
    status: Optional[int] = None
    truncated: Optional[bool] = None
    words: Optional[int] = None


@dataclass
class ContentCharge(Model):
    """One line of what a request spent."""

    step: Optional[str] = None
    item: Optional[str] = None
    amount: Optional[float] = None
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None


@dataclass
class ScanSummary(Model):
    """A completed scan in a visibility status."""

    id: Optional[str] = None
    finished_at: Optional[str] = None
    readiness_score: Optional[int] = None
    breakdown: Optional[ScanBreakdown] = None


@dataclass
class ScanBreakdown(Model):
    """What a scan's reading stands on (docs/visibility.md): its basis, the blended components (0-100) and their weights, the readiness report, and, with engines, the prompts and the measures overall and per engine with 95% Wilson intervals."""

    basis: Optional[str] = None
    components: Optional[Dict[str, Any]] = None
    weights: Optional[Dict[str, Any]] = None
    sentiment_confidence: Optional[float] = None
    readiness: Optional[Dict[str, Any]] = None
    prompts: Optional[List[Dict[str, Any]]] = None
    runs: Optional[int] = None
    overall: Optional[Dict[str, Any]] = None
    engines: Optional[List[Dict[str, Any]]] = None
    surfaces: Optional[List[Dict[str, Any]]] = None
    markets: Optional[List[Dict[str, Any]]] = None


@dataclass
class DeliveryAttempt(Model):
    """DeliveryAttempt"""

    attempt: Optional[int] = None
    at: Optional[str] = None
    response_status_code: Optional[int] = None
    latency_ms: Optional[float] = None
    response_body: Optional[str] = None
    error: Optional[str] = None
    result: Optional[str] = None


@dataclass
class ConnectorInstance(Model):
    """A connector's health on one instance of the server."""

    instance: Optional[str] = None
    state: Optional[str] = None
    restarts: Optional[int] = None
    problem: Optional[str] = None
    build: Optional[str] = None
    checked_at: Optional[str] = None


@dataclass
class Prompt(Model):
    """A question a scan asks every engine."""

    text: Optional[str] = None
    intent: Optional[str] = None


@dataclass
class AnswerSource(Model):
    """A page the engine reports it consulted for the answer. Only http(s) pages are kept: a source or citation the engine gave with another URL (javascript:, data:) is dropped when the answer is read; a page named by its title alone has an empty url."""

    url: Optional[str] = None
    title: Optional[str] = None
    domain: Optional[str] = None


@dataclass
class AnswerCitation(Model):
    """A source the answer's text cites. Only http(s) pages are kept: a source or citation the engine gave with another URL (javascript:, data:) is dropped when the answer is read; a page named by its title alone has an empty url."""

    url: Optional[str] = None
    title: Optional[str] = None
    domain: Optional[str] = None
    start: Optional[int] = None
    end: Optional[int] = None
    text: Optional[str] = None


@dataclass
class AnswerSentence(Model):
    """A sentence of the answer that names the brand."""

    text: Optional[str] = None
    sentiment: Optional[float] = None


@dataclass
class TrafficSummary(Model):
    """A domain's AI crawler requests and AI referrals over the days first_day to last_day."""

    domain_id: Optional[str] = None
    first_day: Optional[str] = None
    last_day: Optional[str] = None
    agents: Optional[List[AgentTraffic]] = None
    purposes: Optional[List[PurposeTraffic]] = None
    top_pages: Optional[List[PageTraffic]] = None
    problems: Optional[List[TrafficProblem]] = None
    referrals: Optional[List[AssistantTraffic]] = None
    last_batch_at: Optional[str] = None


@dataclass
class DayCount(Model):
    """A count on one UTC day (YYYY-MM-DD)."""

    day: Optional[str] = None
    count: Optional[int] = None


@dataclass
class Verifications(Model):
    """Requests by verification: verified, unverified, spoofed."""

    verified: Optional[int] = None
    unverified: Optional[int] = None
    spoofed: Optional[int] = None


@dataclass
class AgentTraffic(Model):
    """One AI agent's requests in the window; status is by class ({"2xx": n, ..., "none": n})."""

    agent: Optional[str] = None
    operator: Optional[str] = None
    purpose: Optional[str] = None
    hits: Optional[int] = None
    by_verification: Optional[Verifications] = None
    status: Optional[Dict[str, int]] = None
    bytes: Optional[int] = None
    days: Optional[List[DayCount]] = None


@dataclass
class PurposeTraffic(Model):
    """The requests of one purpose (train, index, fetch, other), spoofed ones left out."""

    purpose: Optional[str] = None
    hits: Optional[int] = None
    days: Optional[List[DayCount]] = None


@dataclass
class PageTraffic(Model):
    """One page's AI agent requests."""

    page: Optional[str] = None
    hits: Optional[int] = None
    agents: Optional[int] = None


@dataclass
class TrafficProblem(Model):
    """The 4xx or 5xx answers an AI agent got on one page."""

    page: Optional[str] = None
    agent: Optional[str] = None
    status: Optional[str] = None
    hits: Optional[int] = None


@dataclass
class AssistantTraffic(Model):
    """The visits one AI assistant referred."""

    assistant: Optional[str] = None
    visits: Optional[int] = None
    days: Optional[List[DayCount]] = None


@dataclass
class TrafficPage(Model):
    """One page of a domain: crawled by which agents, cited by which engines, visited from which assistants."""

    page: Optional[str] = None
    crawls: Optional[List[AgentHits]] = None
    cited_by: Optional[List[EngineCitation]] = None
    referrals: Optional[List[AssistantVisits]] = None


@dataclass
class AgentHits(Model):
    """An agent's requests of a page, errors the 4xx and 5xx among them."""

    agent: Optional[str] = None
    hits: Optional[int] = None
    errors: Optional[int] = None


@dataclass
class EngineCitation(Model):
    """How many of an engine's answers cited a page."""

    engine: Optional[str] = None
    answers: Optional[int] = None


@dataclass
class AssistantVisits(Model):
    """The visits an assistant sent to a page."""

    assistant: Optional[str] = None
    visits: Optional[int] = None


@dataclass
class IngestResult(Model):
    """What a batch of logs did (Cloudflare's validation upload: validation true, in extra)."""

    batch_id: Optional[str] = None
    duplicate: Optional[bool] = None
    lines: Optional[int] = None
    malformed: Optional[int] = None
    malformed_samples: Optional[List[MalformedLine]] = None


@dataclass
class MalformedLine(Model):
    """A line of a batch that could not be read, its addresses blanked."""

    line: Optional[int] = None
    reason: Optional[str] = None
    excerpt: Optional[str] = None


@dataclass
class IngestToken(Model):
    """A token a log source delivers a domain's logs with."""

    id: Optional[str] = None
    domain_id: Optional[str] = None
    name: Optional[str] = None
    source: Optional[str] = None
    prefix: Optional[str] = None
    fastly_service_id: Optional[str] = None
    client_id: Optional[str] = None
    created_at: Optional[str] = None
    last_used_at: Optional[str] = None
    revoked_at: Optional[str] = None


@dataclass
class CreatedIngestToken(IngestToken):
    """An ingest token just made, with its secret (token), shown only now."""

    token: Optional[str] = None


@dataclass
class Crawler(Model):
    """An AI crawler or assistant of the catalog and the IP range lists that verify it."""

    token: Optional[str] = None
    operator: Optional[str] = None
    purpose: Optional[str] = None
    lists: Optional[List[CrawlerList]] = None


@dataclass
class CrawlerList(Model):
    """An IP range list: whether it is loaded, its prefixes, when its operator made it."""

    name: Optional[str] = None
    loaded: Optional[bool] = None
    prefixes: Optional[int] = None
    created_at: Optional[str] = None


@dataclass
class VercelVerification(Model):
    """The answer of Vercel's drain verification."""

    verified: Optional[bool] = None


@dataclass
class Change(Model):
    """What changed on a monitored domain's site and when it went live: by hand, or by a content request's result
    marked published (content_request_id)."""

    id: Optional[str] = None
    domain_id: Optional[str] = None
    client_id: Optional[str] = None
    title: Optional[str] = None
    notes: Optional[str] = None
    at: Optional[str] = None
    pages: Optional[List[str]] = None
    prompts: Optional[List[str]] = None
    content_request_id: Optional[str] = None
    created_at: Optional[str] = None
    lift_measured_at: Optional[str] = None


@dataclass
class LiftInterval(Model):
    """A 95% confidence interval."""

    low: Optional[float] = None
    high: Optional[float] = None


@dataclass
class LiftDiff(Model):
    """A difference after - before with its 95% interval (status ok), or insufficient_data with the reason and no
    figure; scans_needed and more_scans say what window would do for the effect."""

    status: Optional[str] = None
    reason: Optional[str] = None
    method: Optional[str] = None
    estimate: Optional[float] = None
    interval_95: Optional[LiftInterval] = None
    effect: Optional[float] = None
    scans_needed: Optional[int] = None
    more_scans: Optional[int] = None


@dataclass
class LiftSide(Model):
    """A measure over one side's answers: a rate or share (0 to 1) or a mean rank."""

    value: Optional[float] = None
    units: Optional[int] = None
    prompts: Optional[int] = None
    scans: Optional[int] = None
    design_effect: Optional[float] = None


@dataclass
class LiftArm(Model):
    """A set of prompts on both sides of the change."""

    before: Optional[LiftSide] = None
    after: Optional[LiftSide] = None
    difference: Optional[LiftDiff] = None


@dataclass
class MeasureLift(Model):
    """The lift of one measure; control and did (the difference-in-differences) when the change targets prompts."""

    metric: Optional[str] = None
    before: Optional[LiftSide] = None
    after: Optional[LiftSide] = None
    difference: Optional[LiftDiff] = None
    control: Optional[LiftArm] = None
    did: Optional[LiftDiff] = None


@dataclass
class EngineLift(Model):
    """The lift of one engine's answers (engine "" over every engine)."""

    engine: Optional[str] = None
    measures: Optional[List[MeasureLift]] = None


@dataclass
class LiftWindow(Model):
    """The scans with answers on one side of the change: when the first and the last ended."""

    scans: Optional[int] = None
    first_at: Optional[str] = None
    last_at: Optional[str] = None


@dataclass
class LiftReport(Model):
    """The lift of a change over the answers of scans scans on each side of it, overall and per engine."""

    scans: Optional[int] = None
    before: Optional[LiftWindow] = None
    after: Optional[LiftWindow] = None
    targeted: Optional[bool] = None
    overall: Optional[EngineLift] = None
    engines: Optional[List[EngineLift]] = None


@dataclass
class ChangeLift(Model):
    """A change and its lift."""

    change: Optional[Change] = None
    lift: Optional[LiftReport] = None


@dataclass
class Page(Generic[M]):
    """One page of a list: its items, whether more follow, and the cursor of the next page."""

    items: List[M]
    has_more: bool
    next_cursor: Optional[str]


# The fields that hold another resource (or a list of them), which
# from_dict builds and to_dict writes back: class -> field -> (class, list?).
_NESTED.update({
    BudgetStatus: {"rate_limits": (RateLimits, False), "usage": (RequestUsage, False), "remaining": (RemainingRequests, False), "resets": (WindowResets, False), "budget": (Budget, False), "active_requests": (ActiveRequests, False)},
    ContentRequest: {"result": (ContentResult, False)},
    VisibilityStatus: {"last_scan": (ScanSummary, False)},
    Delivery: {"attempt_log": (DeliveryAttempt, True)},
    ConnectorKind: {"instances": (ConnectorInstance, True)},
    DomainPrompts: {"prompts": (Prompt, True), "generated": (Prompt, True)},
    MonitoredDomain: {"markets": (Market, True)},
    VisibilityReading: {"market": (Market, False)},
    ScanAnswer: {"sources": (AnswerSource, True), "citations": (AnswerCitation, True), "sentences": (AnswerSentence, True),
                 "market": (Market, False)},
    ContentResult: {"analysis": (ContentAnalysis, False), "analysis_after": (ContentAnalysis, False), "flags": (ContentFlag, True), "drafts": (ContentDrafts, False), "source": (ContentSource, False), "charges": (ContentCharge, True)},
    ContentAnalysis: {"findings": (ContentFinding, True)},
    ScanSummary: {"breakdown": (ScanBreakdown, False)},
    TrafficSummary: {"agents": (AgentTraffic, True), "purposes": (PurposeTraffic, True), "top_pages": (PageTraffic, True),
                     "problems": (TrafficProblem, True), "referrals": (AssistantTraffic, True)},
    AgentTraffic: {"by_verification": (Verifications, False), "days": (DayCount, True)},
    PurposeTraffic: {"days": (DayCount, True)},
    AssistantTraffic: {"days": (DayCount, True)},
    TrafficPage: {"crawls": (AgentHits, True), "cited_by": (EngineCitation, True), "referrals": (AssistantVisits, True)},
    IngestResult: {"malformed_samples": (MalformedLine, True)},
    Crawler: {"lists": (CrawlerList, True)},
    LiftDiff: {"interval_95": (LiftInterval, False)},
    LiftArm: {"before": (LiftSide, False), "after": (LiftSide, False), "difference": (LiftDiff, False)},
    MeasureLift: {"before": (LiftSide, False), "after": (LiftSide, False), "difference": (LiftDiff, False),
                  "control": (LiftArm, False), "did": (LiftDiff, False)},
    EngineLift: {"measures": (MeasureLift, True)},
    LiftReport: {"before": (LiftWindow, False), "after": (LiftWindow, False), "overall": (EngineLift, False),
                 "engines": (EngineLift, True)},
    ChangeLift: {"change": (Change, False), "lift": (LiftReport, False)},
})

# What `from aivis.models import *` gives: the resources and Page.
__all__ = [n for n, v in list(globals().items()) if isinstance(v, type) and issubclass(v, Model)] + ["Page"]
