package client

import (
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// methods maps every operationId of core/api/openapi.json to the Client
// method that calls it.
var methods = map[string]string{
	"getTraffic":                  "GetTraffic",
	"listTrafficPages":            "ListTrafficPages",
	"uploadTrafficLogs":           "UploadTrafficLogs",
	"listIngestTokens":            "ListIngestTokens",
	"createIngestToken":           "CreateIngestToken",
	"revokeIngestToken":           "RevokeIngestToken",
	"listCrawlers":                "ListCrawlers",
	"ingestCloudflare":            "IngestCloudflare",
	"ingestVercel":                "IngestVercel",
	"ingestFastly":                "IngestFastly",
	"verifyVercelDrain":           "VerifyVercelDrain",
	"getFastlyChallenge":          "FastlyChallenge",
	"getBudgetStatus":             "BudgetStatus",
	"listContentRequests":         "ListContentRequests",
	"createContentRequest":        "CreateContentRequest",
	"getContentRequest":           "GetContentRequest",
	"cancelContentRequest":        "CancelContentRequest",
	"getVisibility":               "Visibility",
	"recordVisibilityReading":     "RecordReading",
	"getOpenAPIDocument":          "OpenAPIDocument",
	"getHealth":                   "Health",
	"getLiveness":                 "Liveness",
	"getReadiness":                "Readiness",
	"listWebhooks":                "ListWebhooks",
	"createWebhook":               "CreateWebhook",
	"getWebhook":                  "GetWebhook",
	"updateWebhook":               "UpdateWebhook",
	"deleteWebhook":               "DeleteWebhook",
	"rotateWebhookSecret":         "RotateWebhookSecret",
	"testWebhook":                 "TestWebhook",
	"replayWebhookDeliveries":     "ReplayWebhookDeliveries",
	"listWebhookDeliveries":       "ListWebhookDeliveries",
	"getWebhookDelivery":          "GetWebhookDelivery",
	"redeliverWebhookDelivery":    "RedeliverWebhookDelivery",
	"listConnectors":              "ListConnectors",
	"listConnections":             "ListConnections",
	"createConnection":            "CreateConnection",
	"getConnection":               "GetConnection",
	"updateConnection":            "UpdateConnection",
	"deleteConnection":            "DeleteConnection",
	"testConnection":              "TestConnection",
	"replayConnectionDeliveries":  "ReplayConnectionDeliveries",
	"listConnectionDeliveries":    "ListConnectionDeliveries",
	"getConnectionDelivery":       "GetConnectionDelivery",
	"redeliverConnectionDelivery": "RedeliverConnectionDelivery",
	"listEventTypes":              "ListEventTypes",
	"listUsage":                   "ListUsage",
	"listRecentEvents":            "ListEvents",
	"zapierSubscribe":             "ZapierSubscribe",
	"zapierUnsubscribe":           "ZapierUnsubscribe",
	"listDomains":                 "ListDomains",
	"createDomain":                "CreateDomain",
	"getDomain":                   "GetDomain",
	"updateDomain":                "UpdateDomain",
	"deleteDomain":                "DeleteDomain",
	"getDomainPrompts":            "GetDomainPrompts",
	"putDomainPrompts":            "PutDomainPrompts",
	"getVisibilityHistory":        "ListVisibilityHistory",
	"requestScan":                 "RequestScan",
	"getScan":                     "GetScan",
	"listScanAnswers":             "ListScanAnswers",
	"exportAccount":               "ExportAccount",
	"listChanges":                 "ListChanges",
	"createChange":                "CreateChange",
	"getChange":                   "GetChange",
	"deleteChange":                "DeleteChange",
	"getChangeLift":               "GetChangeLift",
	"publishContentRequest":       "PublishContentRequest",
}

func operationIDs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../core/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, item := range doc.Paths {
		for _, op := range item {
			var o struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(op, &o) == nil && o.OperationID != "" {
				ids = append(ids, o.OperationID)
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// TestEveryOperationHasAMethod fails for an operationId of openapi.json
// without a Client method, for a method the table names that the client
// lacks, and for an entry of the table that is no operation any more.
func TestEveryOperationHasAMethod(t *testing.T) {
	ids := operationIDs(t)
	if len(ids) < 40 {
		t.Fatalf("read only %d operations from openapi.json", len(ids))
	}
	ct := reflect.TypeFor[*Client]()
	inDoc := map[string]bool{}
	for _, id := range ids {
		inDoc[id] = true
		m, ok := methods[id]
		if !ok {
			t.Errorf("operation %s has no client method: add one and its row in methods", id)
			continue
		}
		if _, ok := ct.MethodByName(m); !ok {
			t.Errorf("operation %s: Client has no method %s", id, m)
		}
	}
	for id, m := range methods {
		if !inDoc[id] {
			t.Errorf("methods maps %s (to %s), which openapi.json does not have", id, m)
		}
	}
}

// TestNoServerImports keeps the client a library of its own: it imports
// nothing of the server's packages (only webhook, which receivers use).
func TestNoServerImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/aivis/aivis/") && p != "github.com/aivis/aivis/client" && p != "github.com/aivis/aivis/webhook" {
			t.Errorf("client imports %s", p)
		}
	}
}
