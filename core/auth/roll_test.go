package auth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/cache"
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

// TestRevokeDuringTheGrace: a key rolled with the longest grace and then
// revoked is refused from the next request on, by the service that serves
// and by another handle on the file (the CLI), and the roll's new key
// keeps working.
func TestRevokeDuringTheGrace(t *testing.T) {
	for _, revoke := range []string{"RevokeOwned", "Revoke"} {
		t.Run(revoke, func(t *testing.T) {
			e := newEnv(t)
			old := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "cron"})
			n, err := e.svc.Roll(ctx, "acct_std", old.Key.ID, auth.MaxRollGrace)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.Authenticate(ctx, old.APIKey, old.Secret, true); err != nil {
				t.Fatalf("within the grace the old key is refused: %v", err)
			}
			e.clock.Add(time.Minute)
			var k store.Key
			if revoke == "RevokeOwned" {
				k, err = e.svc.RevokeOwned(ctx, "acct_std", old.Key.ID)
			} else {
				cli := &auth.Service{Keys: e.cli(t), Accounts: e.db, Now: e.clock.Now}
				k, err = cli.Revoke(ctx, old.Key.ID)
			}
			if err != nil || !k.RevokedAt.Equal(t0.Add(time.Minute)) {
				t.Fatalf("%s = revoked at %v, %v; want %v", revoke, k.RevokedAt, err, t0.Add(time.Minute))
			}
			for _, secret := range []string{old.Secret, ""} {
				_, err := e.svc.Authenticate(cache.AsOf(ctx, time.Now()), old.APIKey, secret, secret != "")
				wantCode(t, err, fault.KeyRevoked, http.StatusUnauthorized)
			}
			if _, err := e.svc.Authenticate(ctx, n.APIKey, n.Secret, true); err != nil {
				t.Fatalf("the new key: %v", err)
			}
			// A later roll's grace cannot postpone the revocation again.
			if _, err := e.svc.Roll(ctx, "acct_std", old.Key.ID, time.Hour); codeOf(err) != fault.InvalidState {
				t.Errorf("rolling the revoked key: %v", err)
			}
		})
	}
}

func TestRollRefusesAnExpiredKey(t *testing.T) {
	e := newEnv(t)
	k := e.key(t, auth.NewKey{AccountID: "acct_std", Name: "old", ExpiresAt: t0.Add(time.Hour)})
	e.clock.Add(time.Hour)
	_, err := e.svc.Roll(ctx, "acct_std", k.Key.ID, time.Hour)
	wantCode(t, err, fault.InvalidState, http.StatusConflict)
	keys, err := e.db.ListKeys(ctx, "acct_std")
	if err != nil || len(keys) != 1 {
		t.Fatalf("after the refused roll the account has %d keys (%v); want only the expired one", len(keys), err)
	}
}
