package people_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/auth"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/store"
	"github.com/aivis/aivis/core/store/sqlite"
)

func TestPasswordHash(t *testing.T) {
	h, err := people.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=65536,t=3,p=2$") || strings.Contains(h, "correct horse") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := people.HashPassword("correct horse battery")
	if h == h2 {
		t.Error("two hashes of one password are equal: no salt")
	}
	for pw, want := range map[string]bool{"correct horse battery": true, "correct horse batterY": false, "": false} {
		if ok, err := people.CheckPassword(h, pw); ok != want || err != nil {
			t.Errorf("CheckPassword(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	for _, bad := range []string{"", "$2a$10$abc", "$argon2id$v=19$m=0,t=3,p=2$AAAA$AAAA", "$argon2i$v=19$m=65536,t=3,p=2$AAAA$AAAA"} {
		if ok, err := people.CheckPassword(bad, "x"); ok || err == nil {
			t.Errorf("CheckPassword(%q) accepted a malformed hash", bad)
		}
	}
}

func TestRoles(t *testing.T) {
	cases := []struct {
		role                      string
		read, build, manage, owns bool
	}{
		{store.RoleOwner, true, true, true, true},
		{store.RoleAdmin, true, true, true, false},
		{store.RoleDeveloper, true, true, false, false},
		{store.RoleViewer, true, false, false, false},
		{"", false, false, false, false},
		{"root", false, false, false, false},
	}
	for _, c := range cases {
		got := []bool{people.Can(c.role, people.Read), people.Can(c.role, people.Build), people.Can(c.role, people.Manage), people.Can(c.role, people.Own)}
		want := []bool{c.read, c.build, c.manage, c.owns}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q: Can(%d) = %v, want %v", c.role, i, got[i], want[i])
			}
		}
	}
}

func TestSessionsAndInvitations(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	svc := &people.Service{Store: db, Accounts: &accounts.Service{Store: db, Now: clock}, Now: clock}
	token, err := svc.Bootstrap(ctx)
	if err != nil || len(token) != 43 {
		t.Fatalf("bootstrap %q %v", token, err)
	}
	// A second start replaces the link.
	token2, _ := svc.Bootstrap(ctx)
	if _, err := svc.Invitation(ctx, token); err == nil {
		t.Error("the first bootstrap link survived the second")
	}
	owner, err := svc.AcceptInvitation(ctx, people.Accept{Token: token2, Email: "Owner@Example.com", Password: "twelve chars!", AccountName: "Acme", Tier: "starter"})
	if err != nil {
		t.Fatal(err)
	}
	if owner.Role != store.RoleOwner || owner.Email != "owner@example.com" {
		t.Fatalf("owner %+v", owner)
	}
	if _, err := svc.AcceptInvitation(ctx, people.Accept{Token: "short", Email: "x@example.com", Password: "twelve chars!"}); err == nil {
		t.Error("a made-up token was accepted")
	}
	// Too short a password is refused by the rule, not by the form.
	inv, _ := svc.Invite(ctx, owner, "dev@example.com", store.RoleDeveloper)
	if _, err := svc.AcceptInvitation(ctx, people.Accept{Token: inv, Email: "dev@example.com", Password: "short"}); err == nil {
		t.Error("an 5-character password was accepted")
	}
	in, err := svc.SignIn(ctx, "OWNER@example.com", "twelve chars!")
	if err != nil {
		t.Fatalf("sign in (email case differs): %v", err)
	}
	if _, u, err := svc.Session(ctx, in.Token); err != nil || u.ID != owner.ID {
		t.Fatalf("session: %v", err)
	}
	// Sessions end after their lifetime.
	now = now.Add(people.SessionLifetime)
	if _, _, err := svc.Session(ctx, in.Token); err == nil {
		t.Error("a session outlived its lifetime")
	}
	// Invitations expire.
	now = now.Add(people.InvitationLifetime)
	if _, err := svc.Invitation(ctx, inv); err == nil {
		t.Error("an invitation outlived its lifetime")
	}
}

// An invitation is used once, however many accept it at once, and not
// after it expires, even if it was live when the acceptance began.
func TestInvitationUsedOnceAndNotAfterExpiry(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var now atomic.Pointer[time.Time]
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now.Store(&t0)
	clock := func() time.Time { return *now.Load() }
	svc := &people.Service{Store: db, Accounts: &accounts.Service{Store: db, Now: clock}, Now: clock}
	boot, _ := svc.Bootstrap(ctx)
	owner, err := svc.AcceptInvitation(ctx, people.Accept{Token: boot, Email: "owner@example.com", Password: "twelve chars!", AccountName: "Acme", Tier: "starter"})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := svc.Invite(ctx, owner, "dev@example.com", store.RoleDeveloper)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var ok atomic.Int32
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := svc.AcceptInvitation(ctx, people.Accept{Token: inv, Email: "dev@example.com", Password: "twelve chars!"}); err == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if us, _ := db.ListUsers(ctx, owner.AccountID); ok.Load() != 1 || len(us) != 2 {
		t.Fatalf("4 acceptances at once: %d succeeded, %d users; want 1 and 2", ok.Load(), len(us))
	}
	// Read live, expired by the time its user is made.
	inv, _ = svc.Invite(ctx, owner, "late@example.com", store.RoleViewer)
	read, err := svc.Invitation(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	late := read.ExpiresAt
	now.Store(&late)
	hash, _ := people.HashPassword("twelve chars!")
	err = db.AcceptInvitation(ctx, auth.Hash(inv), store.User{ID: "usr_late", AccountID: owner.AccountID, Email: "late@example.com",
		Role: store.RoleViewer, PasswordHash: hash, CreatedAt: late, PasswordAt: late}, nil)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("accepting an invitation at its expiry: %v, want ErrNotFound", err)
	}
	if _, err := db.User(ctx, "usr_late"); err == nil {
		t.Error("a user was made from an expired invitation")
	}
}

// TestBootstrapLinkEndsWithTheFirstUser: a bootstrap link made while no
// one could sign in is dead once any user exists, however that user came
// (here an operator's invitation, as `aivis user invite` makes), both
// when it is opened and when it is accepted.
func TestBootstrapLinkEndsWithTheFirstUser(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "aivis.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	accts := &accounts.Service{Store: db, Now: clock}
	svc := &people.Service{Store: db, Accounts: accts, Now: clock}
	boot, err := svc.Bootstrap(ctx)
	if err != nil || boot == "" {
		t.Fatalf("bootstrap %q %v", boot, err)
	}
	a, err := accts.Create(ctx, "Made by the operator", "starter", false)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := svc.OperatorInvite(ctx, a.ID, "ops@example.com", store.RoleOwner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AcceptInvitation(ctx, people.Accept{Token: inv, Email: "ops@example.com", Password: "twelve chars!"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Invitation(ctx, boot); err == nil {
		t.Error("the bootstrap link opens after a user exists")
	}
	_, err = svc.AcceptInvitation(ctx, people.Accept{Token: boot, Email: "late@example.com", Password: "twelve chars!", AccountName: "Second", Tier: "enterprise"})
	if fe, ok := fault.As(err); !ok || fe.Code != fault.NotFound {
		t.Fatalf("accepting the bootstrap link after a user exists: %v; want NOT_FOUND", err)
	}
	list, err := db.ListAccounts(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("accounts after the refused bootstrap: %d (%v); want only the operator's", len(list), err)
	}
}
