package auth_test

import (
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
)

func TestRollKeepsTheOldKeyForTheGrace(t *testing.T) {
	e := newEnv(t)
	old := e.key(t, auth.NewKey{AccountID: "acct_agency", ClientID: "cli_1", Name: "ci", Scopes: []string{"budget:read"},
		ExpiresAt: t0.Add(90 * 24 * time.Hour)})
	n, err := e.svc.Roll(ctx, "acct_agency", old.Key.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n.Key.Name != "ci" || n.Key.ClientID != "cli_1" || len(n.Key.Scopes) != 1 || !n.Key.ExpiresAt.Equal(old.Key.ExpiresAt) {
		t.Fatalf("the new key %+v is not like the old", n.Key)
	}
	if n.APIKey == old.APIKey || n.Secret == old.Secret {
		t.Fatal("the new key has the old credentials")
	}
	for _, c := range []auth.Created{old, n} {
		if _, err := e.svc.Authenticate(ctx, c.APIKey, c.Secret, true); err != nil {
			t.Fatalf("within the grace %s is refused: %v", c.Key.ID, err)
		}
	}
	e.clock.Add(time.Hour)
	if _, err := e.svc.Authenticate(ctx, old.APIKey, old.Secret, true); codeOf(err) != fault.KeyRevoked {
		t.Fatalf("after the grace the old key: %v, want KEY_REVOKED", err)
	}
	if _, err := e.svc.Authenticate(ctx, n.APIKey, n.Secret, true); err != nil {
		t.Fatalf("the new key: %v", err)
	}
	// A revoked key cannot be rolled; a grace out of bounds is refused.
	if _, err := e.svc.Roll(ctx, "acct_agency", old.Key.ID, 0); codeOf(err) != fault.InvalidState {
		t.Errorf("rolling a revoked key: %v", err)
	}
	if _, err := e.svc.Roll(ctx, "acct_agency", n.Key.ID, 31*24*time.Hour); codeOf(err) != fault.ValidationError {
		t.Errorf("a 31-day grace: %v", err)
	}
}

func TestAnotherAccountsKeyIsNotFound(t *testing.T) {
	e := newEnv(t)
	k := e.key(t, auth.NewKey{AccountID: "acct_agency", Name: "mine"})
	if _, err := e.svc.RevokeOwned(ctx, "acct_other", k.Key.ID); codeOf(err) != fault.NotFound {
		t.Errorf("revoke from another account: %v", err)
	}
	if _, err := e.svc.Roll(ctx, "acct_other", k.Key.ID, 0); codeOf(err) != fault.NotFound {
		t.Errorf("roll from another account: %v", err)
	}
	if _, err := e.svc.Authenticate(ctx, k.APIKey, k.Secret, true); err != nil {
		t.Fatalf("the key was touched: %v", err)
	}
	if _, err := e.svc.RevokeOwned(ctx, "acct_agency", k.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Authenticate(ctx, k.APIKey, k.Secret, true); codeOf(err) != fault.KeyRevoked {
		t.Errorf("after RevokeOwned: %v", err)
	}
}

func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]string{
		"2030-01-02":                "2030-01-02T00:00:00Z",
		"2030-01-02T03:04:05+02:00": "2030-01-02T01:04:05Z",
	} {
		got, err := auth.ParseExpiry(in)
		if err != nil || got.Format(time.RFC3339) != want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := auth.ParseExpiry("tomorrow"); err == nil {
		t.Error("ParseExpiry(tomorrow) succeeded")
	}
}

func codeOf(err error) fault.Code {
	if fe, ok := fault.As(err); ok {
		return fe.Code
	}
	return ""
}
