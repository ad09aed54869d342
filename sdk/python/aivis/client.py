"""The aivis API client: both interfaces, typed results, retries on 429, paged lists as generators."""

from __future__ import annotations

import csv
import datetime
import io
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Iterator, List, Optional, Type, TypeVar, Union

from . import errors
from .models import (BudgetStatus, Change, ChangeLift, Connection, ConnectionTestResult, ConnectorKind, ContentRequest, Crawler,
                     CreatedIngestToken, Delivery, DomainPrompts, Event, EventType, ExportRecord, Health, IngestResult,
                     IngestToken, Model, MonitoredDomain, Page, Readiness, RecordedReading, ReplayResult, Scan,
                     ScanAnswer, TrafficPage, TrafficSummary, UsageCount, VercelVerification, VisibilityReading,
                     VisibilityStatus, Webhook, WebhookTestResult, ZapierSubscription)

M = TypeVar("M", bound=Model)

__version__ = "0.1.0"

_KEYED = "/api/v1/ai"


class Client:
    """A client of one aivis server.

    ``key`` authenticates the bearer interface (``/v1``); ``key`` and
    ``secret`` together the key-and-secret interface (``/api/v1/ai``).
    ``ca_file`` trusts a PEM certificate, such as a server's self-signed
    ``aivis-data/tls/cert.pem``; ``ssl_context`` replaces the TLS settings
    altogether. A call refused with 429 waits ``error.retry_after`` seconds
    (else the Retry-After header, else 60) and is tried again, up to
    ``max_attempts`` times in all; then its RateLimitError is raised.
    """

    def __init__(self, base_url: str, key: Optional[str] = None, secret: Optional[str] = None, *,
                 ca_file: Optional[str] = None, ssl_context: Optional[ssl.SSLContext] = None,
                 timeout: float = 60.0, max_attempts: int = 3, allow_http: bool = False,
                 user_agent: str = "aivis-python/" + __version__,
                 sleep: Callable[[float], None] = time.sleep):
        parsed = urllib.parse.urlsplit(base_url)
        if not parsed.netloc or parsed.scheme not in ("https", "http"):
            raise ValueError("the base URL must be an absolute https:// URL")
        if parsed.scheme == "http" and not allow_http:
            raise ValueError("the base URL must use https (allow_http=True for a TLS-terminating proxy on this host)")
        if ssl_context is None:
            ssl_context = ssl.create_default_context(cafile=ca_file)
        elif ca_file is not None:
            raise ValueError("give either ca_file or ssl_context")
        self._base = base_url.rstrip("/")
        self._key, self._secret = key, secret
        self._ssl = ssl_context
        self._timeout = timeout
        self._max_attempts = max(1, max_attempts)
        self._user_agent = user_agent
        self._sleep = sleep
        #: The rate-limit headers of the last response (X-RateLimit-Limit, -Remaining, -Reset).
        self.last_rate_limit: Dict[str, str] = {}

    # -- transport ---------------------------------------------------------

    def _headers(self, path: str) -> Dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": self._user_agent}
        if path.startswith(_KEYED + "/") or path == _KEYED:
            if self._key:
                h["X-API-Key"] = self._key
            if self._secret:
                h["X-API-Secret"] = self._secret
        elif path.startswith("/v1/") and self._key:
            h["Authorization"] = "Bearer " + self._key
        return h

    def _send(self, method: str, path: str, query: Optional[Dict[str, Any]] = None, body: Any = None,
              idempotency_key: Optional[str] = None) -> tuple:
        """Sends a request, retrying on 429; returns (status, headers, raw body) of a success."""
        with self._open(method, path, query, body, idempotency_key) as res:
            return res.status, res.headers, res.read()

    def _open(self, method: str, path: str, query: Optional[Dict[str, Any]] = None, body: Any = None,
              idempotency_key: Optional[str] = None, headers: Optional[Dict[str, str]] = None) -> Any:
        """Sends a request, retrying on 429; returns the open response of a success, its body unread. A body of
        bytes is sent as it is (headers give its Content-Type); any other as JSON."""
        url = self._base + path
        q = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if q:
            url += "?" + urllib.parse.urlencode(q)
        data = None
        extra, headers = headers, self._headers(path)
        if isinstance(body, (bytes, bytearray)):
            data = bytes(body)
        elif body is not None:
            data = json.dumps(body, default=_jsonable).encode("utf-8")
            headers["Content-Type"] = "application/json"
        headers.update(extra or {})
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        attempt = 0
        while True:
            attempt += 1
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                res = urllib.request.urlopen(req, timeout=self._timeout, context=self._ssl)
                self._note(res.headers)
                return res
            except urllib.error.HTTPError as e:
                raw = e.read()
                e.close()
                self._note(e.headers)
                err = errors.from_response(e.code, raw, e.headers.get("Retry-After"), e.headers.get("X-Request-Id"))
                if e.code != 429 or attempt >= self._max_attempts:
                    raise err from None
                self._sleep(err.retry_after if err.retry_after is not None else 60)

    def _note(self, headers: Any) -> None:
        self.last_rate_limit = {k: headers[k] for k in ("X-RateLimit-Limit", "X-RateLimit-Remaining",
                                                        "X-RateLimit-Reset") if headers.get(k) is not None}

    def _json(self, method: str, path: str, query: Optional[Dict[str, Any]] = None, body: Any = None,
              idempotency_key: Optional[str] = None, headers: Optional[Dict[str, str]] = None) -> Any:
        with self._open(method, path, query, body, idempotency_key, headers) as res:
            status, raw = res.status, res.read()
        if status == 204 or not raw:
            return None
        out = json.loads(raw.decode("utf-8"))
        if path.startswith(_KEYED + "/"):
            return out["data"]  # the key-and-secret interface's envelope
        return out

    def _one(self, cls: Type[M], method: str, path: str, query: Optional[Dict[str, Any]] = None,
             body: Any = None, idempotency_key: Optional[str] = None, headers: Optional[Dict[str, str]] = None) -> M:
        return cls.from_dict(self._json(method, path, query, body, idempotency_key, headers))

    def _page(self, cls: Type[M], path: str, query: Dict[str, Any]) -> Page[M]:
        out = self._json("GET", path, query)
        return Page([cls.from_dict(i) for i in out["items"]], bool(out["has_more"]), out.get("next_cursor"))

    def _all(self, cls: Type[M], path: str, query: Dict[str, Any]) -> Iterator[M]:
        """Every item of a list, page after page, fetched as the generator is read."""
        query = dict(query)
        while True:
            page = self._page(cls, path, query)
            yield from page.items
            if not page.has_more or not page.next_cursor:
                return
            query["cursor"] = page.next_cursor

    def page(self, list_method: Callable[..., Iterator[M]], cursor: Optional[str] = None, **params: Any) -> Page[M]:
        """One page of a list, for callers that keep the cursor themselves:
        ``client.page(client.list_webhooks, limit=10)``, then ``cursor=page.next_cursor``."""
        name = getattr(list_method, "__name__", "")
        spec = _LISTS.get(name)
        if spec is None:
            raise ValueError("%r is not a list method of the client" % name)
        cls, path_of = spec
        params = _params(params)
        args = {k: v for k, v in params.items() if k in _PATH_ARGS}
        query = {k: v for k, v in params.items() if k not in _PATH_ARGS}
        query["cursor"] = cursor
        return self._page(cls, path_of(**args), query)

    # The deliveries of a webhook or a connection (base: /v1/webhooks or /v1/connections).

    def _replay(self, base: str, id: str, since: str, until: Optional[str], key: Optional[str]) -> ReplayResult:
        return self._one(ReplayResult, "POST", base + "/" + _seg(id) + "/replay",
                         body=_drop_none(since=since, until=until), idempotency_key=key)

    def _deliveries(self, base: str, id: str, status: Optional[str], limit: Optional[int]) -> Iterator[Delivery]:
        return self._all(Delivery, base + "/" + _seg(id) + "/deliveries", {"status": status, "limit": limit})

    def _delivery(self, base: str, id: str, delivery_id: str) -> Delivery:
        return self._one(Delivery, "GET", base + "/" + _seg(id) + "/deliveries/" + _seg(delivery_id))

    def _redeliver(self, base: str, id: str, delivery_id: str, key: Optional[str]) -> Delivery:
        return self._one(Delivery, "POST", base + "/" + _seg(id) + "/deliveries/" + _seg(delivery_id) + "/redeliver",
                         body={}, idempotency_key=key)

    def csv_rows(self, method: Callable[..., Any], cursor: Optional[str] = None, **params: Any) -> Iterator[List[str]]:
        """A list as CSV (format=csv), read row by row as the server streams it, the header row first:
        ``client.csv_rows(client.get_visibility_history, domain="example.com")``. The lists that have it:
        get_visibility_history, list_scan_answers, list_webhook_deliveries, list_connection_deliveries,
        list_usage, list_traffic_pages, and get_scan with table= (engines, cited_domains or cited_pages). Every item from cursor on."""
        name, params = getattr(method, "__name__", ""), _params(params)
        if name == "get_scan":
            path = "/v1/visibility/scans/" + _seg(params.pop("id"))
        elif name in _LISTS:
            args = {k: params.pop(k) for k in _PATH_ARGS if k in params}
            path = _LISTS[name][1](**args)
        else:
            raise ValueError("%r is not a list method of the client" % name)
        params.update(format="csv", cursor=cursor)
        with self._open("GET", path, params) as res:
            yield from csv.reader(io.TextIOWrapper(res, encoding="utf-8", newline=""))

    # -- the key-and-secret interface (/api/v1/ai) ---------------------------

    def get_budget_status(self) -> BudgetStatus:
        """GET /api/v1/ai/budget-status: the account's quota, usage and budget."""
        return self._one(BudgetStatus, "GET", _KEYED + "/budget-status")

    def create_content_request(self, domain: str, budget: float, *, idempotency_key: Optional[str] = None,
                               **fields: Any) -> ContentRequest:
        """POST /api/v1/ai/content-requests; fields: url, content, target_queries, type, client_id, metadata."""
        return self._one(ContentRequest, "POST", _KEYED + "/content-requests",
                         body=dict(fields, domain=domain, budget=budget), idempotency_key=idempotency_key)

    def list_content_requests(self, *, status: Optional[str] = None, domain: Optional[str] = None,
                              client_id: Optional[str] = None, limit: Optional[int] = None) -> Iterator[ContentRequest]:
        """GET /api/v1/ai/content-requests, every page."""
        return self._all(ContentRequest, _KEYED + "/content-requests",
                         {"status": status, "domain": domain, "client_id": client_id, "limit": limit})

    def get_content_request(self, id: str) -> ContentRequest:
        """GET /api/v1/ai/content-requests/{id}."""
        return self._one(ContentRequest, "GET", _KEYED + "/content-requests/" + _seg(id))

    def cancel_content_request(self, id: str, *, idempotency_key: Optional[str] = None) -> ContentRequest:
        """POST /api/v1/ai/content-requests/{id}/cancel."""
        return self._one(ContentRequest, "POST", _KEYED + "/content-requests/" + _seg(id) + "/cancel",
                         body={}, idempotency_key=idempotency_key)

    def publish_content_request(self, id: str, url: Optional[str] = None,
                                published_at: Optional[Union[str, datetime.datetime]] = None, *,
                                idempotency_key: Optional[str] = None) -> Change:
        """POST /api/v1/ai/content-requests/{id}/published: a completed request's result went live at url (default:
        the request's) at published_at (default: now). Answers the change it makes on the monitored domain that
        covers the page; marked again, the same change."""
        return self._one(Change, "POST", _KEYED + "/content-requests/" + _seg(id) + "/published",
                         body=_drop_none(url=url, published_at=_stamp(published_at)), idempotency_key=idempotency_key)

    # -- the bearer interface (/v1) -----------------------------------------

    def get_visibility(self, domain: str, *, client_id: Optional[str] = None) -> VisibilityStatus:
        """GET /v1/visibility: a domain's latest reading, trend and last scan."""
        return self._one(VisibilityStatus, "GET", "/v1/visibility", {"domain": domain, "client_id": client_id})

    def record_visibility_reading(self, domain: str, visibility_score: int, sentiment: str, *,
                                  idempotency_key: Optional[str] = None, **fields: Any) -> RecordedReading:
        """POST /v1/visibility; fields: sentiment_score, measured_at, client_id."""
        return self._one(RecordedReading, "POST", "/v1/visibility", idempotency_key=idempotency_key,
                         body=dict(fields, domain=domain, visibility_score=visibility_score, sentiment=sentiment))

    def get_visibility_history(self, domain: str, *, client_id: Optional[str] = None, market: Optional[str] = None,
                               limit: Optional[int] = None) -> Iterator[VisibilityReading]:
        """GET /v1/visibility/history: a domain's readings, newest first, every page; with market ("de-DE"),
        its readings in that market."""
        return self._all(VisibilityReading, "/v1/visibility/history",
                         {"domain": domain, "client_id": client_id, "market": market, "limit": limit})

    def request_scan(self, domain: str, *, client_id: Optional[str] = None,
                     idempotency_key: Optional[str] = None) -> Scan:
        """POST /v1/visibility/scans: scans a monitored domain now (202, the scan queued)."""
        return self._one(Scan, "POST", "/v1/visibility/scans", body=_drop_none(domain=domain, client_id=client_id),
                         idempotency_key=idempotency_key)

    def get_scan(self, id: str) -> Scan:
        """GET /v1/visibility/scans/{id}."""
        return self._one(Scan, "GET", "/v1/visibility/scans/" + _seg(id))

    def list_scan_answers(self, id: str, *, engine: Optional[str] = None, market: Optional[str] = None,
                          prompt: Optional[int] = None,
                          mentioned: Optional[bool] = None, cited: Optional[bool] = None, q: Optional[str] = None,
                          limit: Optional[int] = None) -> Iterator[ScanAnswer]:
        """GET /v1/visibility/scans/{id}/answers: the engines' answers of a scan, every page."""
        return self._all(ScanAnswer, "/v1/visibility/scans/" + _seg(id) + "/answers",
                         {"engine": engine, "market": market, "prompt": prompt, "mentioned": mentioned, "cited": cited, "q": q,
                          "limit": limit})

    # webhooks

    def list_webhooks(self, *, client_id: Optional[str] = None, limit: Optional[int] = None) -> Iterator[Webhook]:
        """GET /v1/webhooks, every page."""
        return self._all(Webhook, "/v1/webhooks", {"client_id": client_id, "limit": limit})

    def create_webhook(self, domain: str, events: List[str], url: Optional[str] = None, *,
                       idempotency_key: Optional[str] = None, **fields: Any) -> Webhook:
        """POST /v1/webhooks; the answer's ``secret`` (whsec_...) is shown this once.
        fields: min_score_change, min_citation_change, min_crawler_errors, client_id."""
        return self._one(Webhook, "POST", "/v1/webhooks", idempotency_key=idempotency_key,
                         body=dict(fields, **_drop_none(domain=domain, events=events, url=url)))

    def get_webhook(self, id: str) -> Webhook:
        """GET /v1/webhooks/{id}."""
        return self._one(Webhook, "GET", "/v1/webhooks/" + _seg(id))

    def update_webhook(self, id: str, **fields: Any) -> Webhook:
        """PATCH /v1/webhooks/{id}; fields: events, url, min_score_change, min_citation_change,
        min_crawler_errors, enabled."""
        return self._one(Webhook, "PATCH", "/v1/webhooks/" + _seg(id), body=fields)

    def delete_webhook(self, id: str) -> None:
        """DELETE /v1/webhooks/{id}."""
        self._json("DELETE", "/v1/webhooks/" + _seg(id))

    def rotate_webhook_secret(self, id: str, *, grace_period: Optional[int] = None,
                              idempotency_key: Optional[str] = None) -> Webhook:
        """POST /v1/webhooks/{id}/rotate-secret: a new secret; the old one signs too for grace_period seconds."""
        return self._one(Webhook, "POST", "/v1/webhooks/" + _seg(id) + "/rotate-secret",
                         body=_drop_none(grace_period=grace_period), idempotency_key=idempotency_key)

    def test_webhook(self, id: str, *, idempotency_key: Optional[str] = None) -> WebhookTestResult:
        """POST /v1/webhooks/{id}/test: sends a webhook_test event."""
        return self._one(WebhookTestResult, "POST", "/v1/webhooks/" + _seg(id) + "/test", body={},
                         idempotency_key=idempotency_key)

    def replay_webhook_deliveries(self, id: str, since: str, until: Optional[str] = None, *,
                                  idempotency_key: Optional[str] = None) -> ReplayResult:
        """POST /v1/webhooks/{id}/replay: delivers again the events since (RFC 3339) up to until."""
        return self._replay("/v1/webhooks", id, since, until, idempotency_key)

    def list_webhook_deliveries(self, id: str, *, status: Optional[str] = None,
                                limit: Optional[int] = None) -> Iterator[Delivery]:
        """GET /v1/webhooks/{id}/deliveries, every page."""
        return self._deliveries("/v1/webhooks", id, status, limit)

    def get_webhook_delivery(self, id: str, delivery_id: str) -> Delivery:
        """GET /v1/webhooks/{id}/deliveries/{delivery_id}, with its attempts."""
        return self._delivery("/v1/webhooks", id, delivery_id)

    def redeliver_webhook_delivery(self, id: str, delivery_id: str, *,
                                   idempotency_key: Optional[str] = None) -> Delivery:
        """POST /v1/webhooks/{id}/deliveries/{delivery_id}/redeliver."""
        return self._redeliver("/v1/webhooks", id, delivery_id, idempotency_key)

    # connectors and connections

    def list_connectors(self) -> Iterator[ConnectorKind]:
        """GET /v1/connectors: the connector kinds this server runs."""
        return self._all(ConnectorKind, "/v1/connectors", {})

    def list_connections(self, *, client_id: Optional[str] = None,
                         limit: Optional[int] = None) -> Iterator[Connection]:
        """GET /v1/connections, every page."""
        return self._all(Connection, "/v1/connections", {"client_id": client_id, "limit": limit})

    def create_connection(self, connector: str, settings: Dict[str, Any], events: List[str], *,
                          idempotency_key: Optional[str] = None, **fields: Any) -> Connection:
        """POST /v1/connections; fields: name, domains, min_score_change, min_citation_change,
        min_crawler_errors, client_id."""
        return self._one(Connection, "POST", "/v1/connections", idempotency_key=idempotency_key,
                         body=dict(fields, connector=connector, settings=settings, events=events))

    def get_connection(self, id: str) -> Connection:
        """GET /v1/connections/{id}."""
        return self._one(Connection, "GET", "/v1/connections/" + _seg(id))

    def update_connection(self, id: str, **fields: Any) -> Connection:
        """PATCH /v1/connections/{id}; fields: name, settings, events, domains, min_score_change,
        min_citation_change, min_crawler_errors, enabled."""
        return self._one(Connection, "PATCH", "/v1/connections/" + _seg(id), body=fields)

    def delete_connection(self, id: str) -> None:
        """DELETE /v1/connections/{id}."""
        self._json("DELETE", "/v1/connections/" + _seg(id))

    def test_connection(self, id: str, *, idempotency_key: Optional[str] = None) -> ConnectionTestResult:
        """POST /v1/connections/{id}/test: sends a webhook_test event through the connector."""
        return self._one(ConnectionTestResult, "POST", "/v1/connections/" + _seg(id) + "/test", body={},
                         idempotency_key=idempotency_key)

    def replay_connection_deliveries(self, id: str, since: str, until: Optional[str] = None, *,
                                     idempotency_key: Optional[str] = None) -> ReplayResult:
        """POST /v1/connections/{id}/replay."""
        return self._replay("/v1/connections", id, since, until, idempotency_key)

    def list_connection_deliveries(self, id: str, *, status: Optional[str] = None,
                                   limit: Optional[int] = None) -> Iterator[Delivery]:
        """GET /v1/connections/{id}/deliveries, every page."""
        return self._deliveries("/v1/connections", id, status, limit)

    def get_connection_delivery(self, id: str, delivery_id: str) -> Delivery:
        """GET /v1/connections/{id}/deliveries/{delivery_id}."""
        return self._delivery("/v1/connections", id, delivery_id)

    def redeliver_connection_delivery(self, id: str, delivery_id: str, *,
                                      idempotency_key: Optional[str] = None) -> Delivery:
        """POST /v1/connections/{id}/deliveries/{delivery_id}/redeliver."""
        return self._redeliver("/v1/connections", id, delivery_id, idempotency_key)

    def zapier_subscribe(self, target_url: str, event: str, *, domain: Optional[str] = None,
                         client_id: Optional[str] = None, idempotency_key: Optional[str] = None) -> ZapierSubscription:
        """POST /v1/zapier/hooks: a Zapier REST Hook subscription."""
        return self._one(ZapierSubscription, "POST", "/v1/zapier/hooks", idempotency_key=idempotency_key,
                         body=_drop_none(target_url=target_url, event=event, domain=domain, client_id=client_id))

    def zapier_unsubscribe(self, id: str) -> None:
        """DELETE /v1/zapier/hooks/{id}."""
        self._json("DELETE", "/v1/zapier/hooks/" + _seg(id))

    # events

    def list_recent_events(self, *, event: Optional[str] = None, client_id: Optional[str] = None,
                           limit: Optional[int] = None) -> Iterator[Event]:
        """GET /v1/events: the account's recent events (of one kind, event=), newest first."""
        return self._all(Event, "/v1/events", {"event": event, "client_id": client_id, "limit": limit})

    def list_usage(self, *, from_: Optional[Union[str, datetime.datetime]] = None,
                   to: Optional[Union[str, datetime.datetime]] = None, key_id: Optional[str] = None,
                   client_id: Optional[str] = None, limit: Optional[int] = None) -> Iterator[UsageCount]:
        """GET /v1/usage: the requests made per key and UTC hour, oldest first, of the hours from from_ (default
        30 days ago) up to to (default no end); one key's with key_id, one client's with client_id."""
        return self._all(UsageCount, "/v1/usage", {"from": _stamp(from_), "to": _stamp(to), "key_id": key_id,
                                                   "client_id": client_id, "limit": limit})

    def list_event_types(self) -> Iterator[EventType]:
        """GET /v1/event-types: every event kind with its description, JSON Schema and example."""
        return self._all(EventType, "/v1/event-types", {})

    # domains and prompts

    def list_domains(self, *, client_id: Optional[str] = None, limit: Optional[int] = None) -> Iterator[MonitoredDomain]:
        """GET /v1/domains, every page."""
        return self._all(MonitoredDomain, "/v1/domains", {"client_id": client_id, "limit": limit})

    def create_domain(self, domain: str, *, idempotency_key: Optional[str] = None, **fields: Any) -> MonitoredDomain:
        """POST /v1/domains; fields: brands, aliases, competitors, topics, prompts, markets (Market or
        {"country", "language"} each), client_id."""
        return self._one(MonitoredDomain, "POST", "/v1/domains", body=dict(fields, domain=domain),
                         idempotency_key=idempotency_key)

    def get_domain(self, id: str) -> MonitoredDomain:
        """GET /v1/domains/{id}."""
        return self._one(MonitoredDomain, "GET", "/v1/domains/" + _seg(id))

    def update_domain(self, id: str, **fields: Any) -> MonitoredDomain:
        """PATCH /v1/domains/{id}; fields: brands, aliases, competitors, topics, prompts, markets."""
        return self._one(MonitoredDomain, "PATCH", "/v1/domains/" + _seg(id), body=fields)

    def delete_domain(self, id: str) -> None:
        """DELETE /v1/domains/{id}."""
        self._json("DELETE", "/v1/domains/" + _seg(id))

    def get_domain_prompts(self, id: str) -> DomainPrompts:
        """GET /v1/domains/{id}/prompts: the owner's and the generated prompts."""
        return self._one(DomainPrompts, "GET", "/v1/domains/" + _seg(id) + "/prompts")

    def put_domain_prompts(self, id: str, prompts: List[Any]) -> DomainPrompts:
        """PUT /v1/domains/{id}/prompts: replaces the owner's prompts, each {"text", ["intent"]}."""
        return self._one(DomainPrompts, "PUT", "/v1/domains/" + _seg(id) + "/prompts", body={"prompts": prompts})

    def export_account(self) -> Iterator[ExportRecord]:
        """GET /v1/account/export: the account's records, read one by one as the server streams them (NDJSON)."""
        with self._open("GET", "/v1/account/export") as res:
            for line in res:
                if line.strip():
                    yield ExportRecord.from_dict(json.loads(line))

    # traffic: AI crawlers and referrals

    def get_traffic(self, id: str, *, from_: Optional[str] = None, to: Optional[str] = None) -> TrafficSummary:
        """GET /v1/domains/{id}/traffic: the domain's AI crawler requests and referrals over the days from_ to to
        (YYYY-MM-DD, both included; default the last 30 days)."""
        return self._one(TrafficSummary, "GET", "/v1/domains/" + _seg(id) + "/traffic", {"from": from_, "to": to})

    def list_traffic_pages(self, id: str, *, from_: Optional[str] = None, to: Optional[str] = None,
                           limit: Optional[int] = None) -> Iterator[TrafficPage]:
        """GET /v1/domains/{id}/traffic/pages, every page: each page's crawls, the engines citing it in the latest
        scan, and its referrals, in the order of the paths."""
        return self._all(TrafficPage, "/v1/domains/" + _seg(id) + "/traffic/pages", {"from": from_, "to": to, "limit": limit})

    def upload_traffic_logs(self, id: str, log: bytes, *, idempotency_key: Optional[str] = None) -> IngestResult:
        """POST /v1/domains/{id}/traffic/logs: a combined log file (Apache, nginx), gzip or plain. A file uploaded
        twice is kept once (duplicate)."""
        ct = "application/gzip" if log[:2] == b"\x1f\x8b" else "text/plain"
        return self._one(IngestResult, "POST", "/v1/domains/" + _seg(id) + "/traffic/logs", body=bytes(log),
                         idempotency_key=idempotency_key, headers={"Content-Type": ct})

    def list_ingest_tokens(self, id: str) -> Iterator[IngestToken]:
        """GET /v1/domains/{id}/ingest-tokens: the domain's tokens, revoked ones too, newest first."""
        return self._all(IngestToken, "/v1/domains/" + _seg(id) + "/ingest-tokens", {})

    def create_ingest_token(self, id: str, name: str, source: str, *, signing_secret: Optional[str] = None,
                            fastly_service_id: Optional[str] = None,
                            idempotency_key: Optional[str] = None) -> CreatedIngestToken:
        """POST /v1/domains/{id}/ingest-tokens: a token of one source (cloudflare, vercel, fastly, file); its secret
        (token) is in this answer only. A vercel token needs the drain's signing_secret."""
        return self._one(CreatedIngestToken, "POST", "/v1/domains/" + _seg(id) + "/ingest-tokens",
                         body=_drop_none(name=name, source=source, signing_secret=signing_secret,
                                         fastly_service_id=fastly_service_id), idempotency_key=idempotency_key)

    def revoke_ingest_token(self, id: str, token_id: str) -> None:
        """DELETE /v1/domains/{id}/ingest-tokens/{token_id}: its deliveries are refused from now on."""
        self._json("DELETE", "/v1/domains/" + _seg(id) + "/ingest-tokens/" + _seg(token_id))

    def list_crawlers(self) -> Iterator[Crawler]:
        """GET /v1/crawlers: the AI crawlers and assistants aivis knows and the range lists that verify them."""
        return self._all(Crawler, "/v1/crawlers", {})

    # changes and their lift

    def list_changes(self, id: str, *, from_: Optional[Union[str, datetime.datetime]] = None,
                     to: Optional[Union[str, datetime.datetime]] = None, limit: Optional[int] = None) -> Iterator[Change]:
        """GET /v1/domains/{id}/changes, every page, the latest first: those that went live from from_ until to (RFC
        3339 times, or dates that include their day)."""
        return self._all(Change, "/v1/domains/" + _seg(id) + "/changes", {"from": _stamp(from_), "to": _stamp(to),
                                                                         "limit": limit})

    def create_change(self, id: str, title: str, *, notes: Optional[str] = None,
                      at: Optional[Union[str, datetime.datetime]] = None, pages: Optional[List[str]] = None,
                      prompts: Optional[List[str]] = None, idempotency_key: Optional[str] = None) -> Change:
        """POST /v1/domains/{id}/changes: what changed and when it went live (default: now), optionally the pages
        (URLs on the domain or paths) and the domain's prompts it targets."""
        return self._one(Change, "POST", "/v1/domains/" + _seg(id) + "/changes", idempotency_key=idempotency_key,
                         body=_drop_none(title=title, notes=notes, at=_stamp(at), pages=pages, prompts=prompts))

    def get_change(self, id: str, change_id: str) -> Change:
        """GET /v1/domains/{id}/changes/{change_id}."""
        return self._one(Change, "GET", "/v1/domains/" + _seg(id) + "/changes/" + _seg(change_id))

    def delete_change(self, id: str, change_id: str) -> None:
        """DELETE /v1/domains/{id}/changes/{change_id}."""
        self._json("DELETE", "/v1/domains/" + _seg(id) + "/changes/" + _seg(change_id))

    def get_change_lift(self, id: str, change_id: str, *, scans: Optional[int] = None, effect: Optional[float] = None,
                        position_effect: Optional[float] = None) -> ChangeLift:
        """GET /v1/domains/{id}/changes/{change_id}/lift: per measure, overall and per engine, the difference after -
        before with its 95% interval (and the difference-in-differences when the change targets prompts), or
        insufficient_data with the scans needed for effect."""
        return self._one(ChangeLift, "GET", "/v1/domains/" + _seg(id) + "/changes/" + _seg(change_id) + "/lift",
                         {"scans": scans, "effect": effect, "position_effect": position_effect})

    # The ingest endpoints, which CDNs call with a domain's ingest token (not the key): a forwarder may deliver
    # a batch with these.

    def _ingest(self, source: str, token: str, batch: bytes, content_type: str, key: Optional[str],
                headers: Optional[Dict[str, str]] = None) -> IngestResult:
        h = {"Authorization": "Bearer " + token, "Content-Type": content_type}
        h.update(headers or {})
        return self._one(IngestResult, "POST", "/ingest/v1/" + source, body=bytes(batch), idempotency_key=key, headers=h)

    def ingest_cloudflare(self, token: str, batch: bytes, *, idempotency_key: Optional[str] = None) -> IngestResult:
        """POST /ingest/v1/cloudflare: a Logpush batch (NDJSON, gzip or plain). The batch is kept once per content
        whatever the key (idempotency_key is sent, and not needed)."""
        return self._ingest("cloudflare", token, batch, "application/x-ndjson", idempotency_key)

    def ingest_vercel(self, token: str, batch: bytes, signature: str, *,
                      idempotency_key: Optional[str] = None) -> IngestResult:
        """POST /ingest/v1/vercel: a log drain's delivery, signature its x-vercel-signature (hex HMAC-SHA1 of batch
        under the drain's secret)."""
        return self._ingest("vercel", token, batch, "application/json", idempotency_key, {"x-vercel-signature": signature})

    def ingest_fastly(self, token: str, batch: bytes, *, idempotency_key: Optional[str] = None) -> IngestResult:
        """POST /ingest/v1/fastly: an HTTPS logging batch of JSON entries."""
        return self._ingest("fastly", token, batch, "application/json", idempotency_key)

    def verify_vercel_drain(self, verify: Optional[str] = None) -> tuple:
        """GET /ingest/v1/vercel: Vercel's verification; returns (VercelVerification, the x-vercel-verify header)."""
        with self._open("GET", "/ingest/v1/vercel", {"verify": verify}) as res:
            return VercelVerification.from_dict(json.loads(res.read().decode("utf-8"))), res.headers.get("x-vercel-verify")

    def get_fastly_challenge(self) -> str:
        """GET /.well-known/fastly/logging/challenge: "*" (any Fastly service may deliver)."""
        with self._open("GET", "/.well-known/fastly/logging/challenge") as res:
            return res.read().decode("utf-8").strip()

    # unauthenticated

    def get_open_api_document(self) -> Dict[str, Any]:
        """GET /openapi.json: the OpenAPI document this server serves."""
        return self._json("GET", "/openapi.json")

    def get_health(self) -> Health:
        """GET /healthz."""
        return self._one(Health, "GET", "/healthz")

    def get_liveness(self) -> Health:
        """GET /livez."""
        return self._one(Health, "GET", "/livez")

    def get_readiness(self) -> Readiness:
        """GET /readyz: ready, or ServerError (503) naming what fails."""
        return self._one(Readiness, "GET", "/readyz")


_PATH_ARGS = ("id",)

# The list methods, for Client.page: the item class and the path.
_LISTS: Dict[str, tuple] = {
    "list_content_requests": (ContentRequest, lambda: _KEYED + "/content-requests"),
    "get_visibility_history": (VisibilityReading, lambda: "/v1/visibility/history"),
    "list_scan_answers": (ScanAnswer, lambda id: "/v1/visibility/scans/" + _seg(id) + "/answers"),
    "list_webhooks": (Webhook, lambda: "/v1/webhooks"),
    "list_webhook_deliveries": (Delivery, lambda id: "/v1/webhooks/" + _seg(id) + "/deliveries"),
    "list_connectors": (ConnectorKind, lambda: "/v1/connectors"),
    "list_connections": (Connection, lambda: "/v1/connections"),
    "list_connection_deliveries": (Delivery, lambda id: "/v1/connections/" + _seg(id) + "/deliveries"),
    "list_recent_events": (Event, lambda: "/v1/events"),
    "list_event_types": (EventType, lambda: "/v1/event-types"),
    "list_usage": (UsageCount, lambda: "/v1/usage"),
    "list_domains": (MonitoredDomain, lambda: "/v1/domains"),
    "list_traffic_pages": (TrafficPage, lambda id: "/v1/domains/" + _seg(id) + "/traffic/pages"),
    "list_ingest_tokens": (IngestToken, lambda id: "/v1/domains/" + _seg(id) + "/ingest-tokens"),
    "list_crawlers": (Crawler, lambda: "/v1/crawlers"),
    "list_changes": (Change, lambda id: "/v1/domains/" + _seg(id) + "/changes"),
}


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _stamp(t: Optional[Union[str, datetime.datetime]]) -> Optional[str]:
    """A time of a query: RFC 3339 in UTC (a naive datetime is taken as UTC)."""
    if not isinstance(t, datetime.datetime):
        return t
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _jsonable(v: Any) -> Any:
    """A resource given in a body (a Market) as its JSON object."""
    if isinstance(v, Model):
        return v.to_dict()
    raise TypeError("%r is not JSON serializable" % (v,))


def _params(params: Dict[str, Any]) -> Dict[str, Any]:
    """A method's keyword arguments as a query's: from_ is from, a datetime RFC 3339."""
    return {("from" if k == "from_" else k): _stamp(v) for k, v in params.items()}


def _drop_none(**kw: Any) -> Dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}
