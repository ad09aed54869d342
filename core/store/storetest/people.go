package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aivis/aivis/core/store"
)

// newUser adds a user of an account the only way users are added: an
// invitation, accepted.
func newUser(t *testing.T, s store.Store, id, accountID, email, role string) store.User {
	t.Helper()
	inv := store.Invitation{TokenHash: []byte("inv-" + id), AccountID: accountID, Email: email, Role: role, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateInvitation(ctx, inv), "CreateInvitation")
	u := store.User{ID: id, AccountID: accountID, Email: email, Role: role, PasswordHash: "$argon2id$v=19$m=65536,t=1,p=4$" + id,
		CreatedAt: t0, PasswordAt: t0}
	must(t, s.AcceptInvitation(ctx, inv.TokenHash, u, nil), "AcceptInvitation")
	return u
}

func newSession(t *testing.T, s store.Store, token, userID string, expires time.Time) store.Session {
	t.Helper()
	sess := store.Session{TokenHash: []byte(token), UserID: userID, CSRF: "csrf-" + token, CreatedAt: t0, ExpiresAt: expires}
	must(t, s.CreateSession(ctx, sess), "CreateSession")
	return sess
}

// A user keeps every field and is found by id and by email (in any case);
// ListUsers lists an account's, oldest first; a session is found with its
// user until it expires; SetPassword ends the user's other sessions,
// SetRole and DeleteUser all of them; another account's user is
// ErrNotFound to SetRole and DeleteUser.
func testUsersAndSessions(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	newAccount(t, s, "acct_2", store.AccountStandard)
	owner := newUser(t, s, "usr_1", "acct_1", "owner@example.com", store.RoleOwner)
	newUser(t, s, "usr_2", "acct_1", "dev@example.com", store.RoleDeveloper)
	newUser(t, s, "usr_3", "acct_2", "other@example.com", store.RoleOwner)
	if got, err := s.User(ctx, "usr_1"); err != nil || !reflect.DeepEqual(got, owner) {
		t.Errorf("User round trip:\n got  %+v, %v\n want %+v", got, err, owner)
	}
	for _, email := range []string{"dev@example.com", "DEV@Example.COM"} {
		if got, err := s.UserByEmail(ctx, email); err != nil || got.ID != "usr_2" {
			t.Errorf("UserByEmail(%s) = %+v, %v; want usr_2", email, got, err)
		}
	}
	if _, err := s.UserByEmail(ctx, "nobody@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UserByEmail of an unknown email: %v, want ErrNotFound", err)
	}
	if _, err := s.User(ctx, "usr_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("User of an unknown id: %v, want ErrNotFound", err)
	}
	if us, err := s.ListUsers(ctx, "acct_1"); err != nil || len(us) != 2 || us[0].ID != "usr_1" || us[1].ID != "usr_2" {
		t.Errorf("ListUsers = %+v, %v; want the account's two, oldest first", us, err)
	}
	if n, err := s.CountUsers(ctx); err != nil || n != 3 {
		t.Errorf("CountUsers = %d, %v; want 3", n, err)
	}

	now := t0.Add(time.Minute)
	a := newSession(t, s, "a", "usr_1", now.Add(time.Hour))
	newSession(t, s, "b", "usr_1", now.Add(time.Hour))
	newSession(t, s, "c", "usr_2", now.Add(time.Hour))
	newSession(t, s, "expired", "usr_1", now)
	if err := s.CreateSession(ctx, store.Session{TokenHash: []byte("a"), UserID: "usr_2", CSRF: "x", CreatedAt: t0, ExpiresAt: now}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateSession of a taken token hash: %v, want ErrConflict", err)
	}
	found := func(token string) bool {
		_, _, err := s.SessionByHash(ctx, []byte(token), now)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SessionByHash: %v", err)
		}
		return err == nil
	}
	if got, u, err := s.SessionByHash(ctx, []byte("a"), now); err != nil || !reflect.DeepEqual(got, a) || !reflect.DeepEqual(u, owner) {
		t.Errorf("SessionByHash round trip:\n got  %+v %+v, %v\n want %+v %+v", got, u, err, a, owner)
	}
	if found("expired") {
		t.Error("SessionByHash found a session that expired at now")
	}

	must(t, s.SetPassword(ctx, "usr_1", "$argon2id$new", now, []byte("a")), "SetPassword")
	if u, err := s.User(ctx, "usr_1"); err != nil || u.PasswordHash != "$argon2id$new" || !u.PasswordAt.Equal(now) {
		t.Errorf("after SetPassword: %+v, %v", u, err)
	}
	if !found("a") || found("b") || !found("c") {
		t.Errorf("after SetPassword keeping a: a %v, b %v, c %v; want the user's other sessions ended, another user's kept", found("a"), found("b"), found("c"))
	}
	must(t, s.SetPassword(ctx, "usr_1", "$argon2id$newer", now, nil), "SetPassword")
	if found("a") {
		t.Error("SetPassword keeping none left a session")
	}
	if err := s.SetPassword(ctx, "usr_none", "x", now, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPassword of an unknown user: %v, want ErrNotFound", err)
	}

	if err := s.SetRole(ctx, "acct_2", "usr_2", store.RoleOwner); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetRole of another account's user: %v, want ErrNotFound", err)
	}
	if !found("c") {
		t.Error("a refused SetRole ended the user's session")
	}
	must(t, s.SetRole(ctx, "acct_1", "usr_2", store.RoleAdmin), "SetRole")
	if u, err := s.User(ctx, "usr_2"); err != nil || u.Role != store.RoleAdmin || found("c") {
		t.Errorf("after SetRole: %+v, %v, session kept %v; want admin, its sessions ended", u, err, found("c"))
	}
	newSession(t, s, "d", "usr_2", now.Add(time.Hour))
	if err := s.DeleteUser(ctx, "acct_2", "usr_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteUser of another account's user: %v, want ErrNotFound", err)
	}
	must(t, s.DeleteUser(ctx, "acct_1", "usr_2"), "DeleteUser")
	if _, err := s.User(ctx, "usr_2"); !errors.Is(err, store.ErrNotFound) || found("d") {
		t.Errorf("after DeleteUser: %v, session kept %v", err, found("d"))
	}
	newSession(t, s, "e", "usr_1", now.Add(time.Hour))
	must(t, s.DeleteSession(ctx, []byte("e")), "DeleteSession")
	if found("e") {
		t.Error("DeleteSession left the session")
	}
}

// An invitation is used once: of 32 concurrent acceptances on two
// handles, exactly one adds its user; one expired by the user's creation,
// or whose email has a user (in any case, ErrConflict, the invitation
// kept), adds none; ListInvitations lists an account's unexpired ones.
func testInvitationUsedOnce(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	newAccount(t, s, "acct_1", store.AccountStandard)
	newAccount(t, s, "acct_2", store.AccountStandard)
	newUser(t, s, "usr_owner", "acct_1", "owner@example.com", store.RoleOwner)
	inv := store.Invitation{TokenHash: []byte("token-1"), AccountID: "acct_1", Email: "new@example.com", Role: store.RoleViewer,
		InvitedBy: "usr_owner", CreatedAt: t0.In(elsewhere), ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateInvitation(ctx, inv), "CreateInvitation")
	if err := s.CreateInvitation(ctx, inv); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateInvitation of a taken token hash: %v, want ErrConflict", err)
	}
	want := inv
	want.CreatedAt = t0
	if got, err := s.Invitation(ctx, inv.TokenHash, t0); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Invitation round trip:\n got  %+v, %v\n want %+v", got, err, want)
	}
	if _, err := s.Invitation(ctx, inv.TokenHash, inv.ExpiresAt); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Invitation at its expiry: %v, want ErrNotFound", err)
	}

	var won []int
	var c tally
	Together(concurrency, func(i int) {
		u := store.User{ID: fmt.Sprintf("usr_%02d", i), AccountID: "acct_1", Email: fmt.Sprintf("new%d@example.com", i), Role: store.RoleViewer,
			PasswordHash: "$argon2id$x", CreatedAt: t0.Add(time.Minute), PasswordAt: t0.Add(time.Minute)}
		err := hs[i%2].AcceptInvitation(ctx, inv.TokenHash, u, nil)
		if errors.Is(err, store.ErrNotFound) {
			err = errRefused
		}
		if err == nil {
			c.mu.Lock()
			won = append(won, i)
			c.mu.Unlock()
		}
		c.add(err)
	})
	c.expect(t, "concurrent AcceptInvitation of one invitation", 1)
	if us, err := s.ListUsers(ctx, "acct_1"); err != nil || len(us) != 2 || len(won) == 1 && us[1].ID != fmt.Sprintf("usr_%02d", won[0]) {
		t.Errorf("users after the race: %+v, %v; want the owner and the one that won", us, err)
	}
	if _, err := s.Invitation(ctx, inv.TokenHash, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Invitation once used: %v, want ErrNotFound", err)
	}

	late := store.Invitation{TokenHash: []byte("token-late"), AccountID: "acct_1", Email: "late@example.com", Role: store.RoleViewer,
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	taken := store.Invitation{TokenHash: []byte("token-taken"), AccountID: "acct_1", Email: "x@example.com", Role: store.RoleAdmin,
		CreatedAt: t0.Add(time.Second), ExpiresAt: t0.Add(2 * time.Hour)}
	theirs := store.Invitation{TokenHash: []byte("token-theirs"), AccountID: "acct_2", Email: "y@example.com", Role: store.RoleAdmin,
		CreatedAt: t0, ExpiresAt: t0.Add(2 * time.Hour)}
	for _, i := range []store.Invitation{late, taken, theirs} {
		must(t, s.CreateInvitation(ctx, i), "CreateInvitation")
	}
	u := store.User{ID: "usr_late", AccountID: "acct_1", Email: "late@example.com", Role: store.RoleViewer, PasswordHash: "x",
		CreatedAt: t0.Add(time.Hour), PasswordAt: t0.Add(time.Hour)}
	if err := s.AcceptInvitation(ctx, late.TokenHash, u, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AcceptInvitation expired by the user's creation: %v, want ErrNotFound", err)
	}
	u.ID, u.Email, u.CreatedAt = "usr_taken", "OWNER@example.com", t0.Add(time.Minute)
	if err := s.AcceptInvitation(ctx, taken.TokenHash, u, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("AcceptInvitation with an email that has a user (in another case): %v, want ErrConflict", err)
	}
	if _, err := s.Invitation(ctx, taken.TokenHash, t0.Add(time.Minute)); err != nil {
		t.Errorf("the invitation refused for its email was used up: %v", err)
	}
	if is, err := s.ListInvitations(ctx, "acct_1", t0.Add(30*time.Minute)); err != nil || len(is) != 2 || string(is[0].TokenHash) != "token-late" ||
		string(is[1].TokenHash) != "token-taken" {
		t.Errorf("ListInvitations = %+v, %v; want the account's two unexpired, oldest first", is, err)
	}
	if is, err := s.ListInvitations(ctx, "acct_1", t0.Add(time.Hour)); err != nil || len(is) != 1 {
		t.Errorf("ListInvitations once one expired = %d, %v; want 1", len(is), err)
	}
	if err := s.DeleteInvitation(ctx, "acct_1", theirs.TokenHash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteInvitation of another account's: %v, want ErrNotFound", err)
	}
	must(t, s.DeleteInvitation(ctx, "acct_1", taken.TokenHash), "DeleteInvitation")
	if _, err := s.Invitation(ctx, taken.TokenHash, t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Invitation once deleted: %v, want ErrNotFound", err)
	}
}

// A bootstrap invitation (no account) is found and accepted only while no
// user exists; accepting one creates its account and user and ends every
// other bootstrap invitation: of 32 concurrent acceptances of two of them
// on two handles, exactly one makes an account. DeleteBootstrapInvitations
// forgets them, and only them.
func testBootstrap(t *testing.T, newStore Constructor) {
	s, reopen := newStore(t)
	hs := handles(t, s, reopen, 2)
	boot := func(token string) store.Invitation {
		inv := store.Invitation{TokenHash: []byte(token), Email: token + "@example.com", Role: store.RoleOwner, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		must(t, s.CreateInvitation(ctx, inv), "CreateInvitation")
		return inv
	}
	a, b := boot("boot-a"), boot("boot-b")
	if got, err := s.Invitation(ctx, a.TokenHash, t0); err != nil || got.AccountID != "" {
		t.Fatalf("Invitation of a bootstrap invitation while no user exists: %+v, %v", got, err)
	}
	var c tally
	Together(concurrency, func(i int) {
		acct := store.Account{ID: fmt.Sprintf("acct_%02d", i), Name: "First", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}
		u := store.User{ID: fmt.Sprintf("usr_%02d", i), AccountID: acct.ID, Email: fmt.Sprintf("first%d@example.com", i), Role: store.RoleOwner,
			PasswordHash: "x", CreatedAt: t0, PasswordAt: t0}
		err := hs[i%2].AcceptInvitation(ctx, [][]byte{a.TokenHash, b.TokenHash}[i%4/2], u, &acct)
		if errors.Is(err, store.ErrNotFound) {
			err = errRefused
		}
		c.add(err)
	})
	c.expect(t, "concurrent AcceptInvitation of two bootstrap invitations", 1)
	if as, err := s.ListAccounts(ctx); err != nil || len(as) != 1 {
		t.Errorf("accounts after the race: %+v, %v; want one", as, err)
	} else if us, err := s.ListUsers(ctx, as[0].ID); err != nil || len(us) != 1 || us[0].Role != store.RoleOwner {
		t.Errorf("the account's users: %+v, %v; want its owner", us, err)
	}
	if n, err := s.CountUsers(ctx); err != nil || n != 1 {
		t.Errorf("CountUsers = %d, %v; want 1", n, err)
	}
	for _, inv := range []store.Invitation{a, b, boot("boot-c")} {
		if _, err := s.Invitation(ctx, inv.TokenHash, t0); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Invitation of bootstrap invitation %s once a user exists: %v, want ErrNotFound", inv.TokenHash, err)
		}
	}
	acct := store.Account{ID: "acct_late", Name: "Late", Tier: "starter", Type: store.AccountStandard, CreatedAt: t0}
	u := store.User{ID: "usr_late", AccountID: acct.ID, Email: "late@example.com", Role: store.RoleOwner, PasswordHash: "x", CreatedAt: t0, PasswordAt: t0}
	if err := s.AcceptInvitation(ctx, []byte("boot-c"), u, &acct); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AcceptInvitation of a bootstrap invitation once a user exists: %v, want ErrNotFound", err)
	}
	if _, err := s.Account(ctx, "acct_late"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused bootstrap acceptance created its account: %v", err)
	}

	as, _ := s.ListAccounts(ctx)
	kept := store.Invitation{TokenHash: []byte("kept"), AccountID: as[0].ID, Email: "k@example.com", Role: store.RoleViewer, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	must(t, s.CreateInvitation(ctx, kept), "CreateInvitation")
	must(t, s.DeleteBootstrapInvitations(ctx), "DeleteBootstrapInvitations")
	if is, err := s.ListInvitations(ctx, as[0].ID, t0); err != nil || len(is) != 1 {
		t.Errorf("DeleteBootstrapInvitations took an account's invitation: %+v, %v", is, err)
	}
	// None is left to be found should every user go.
	us, _ := s.ListUsers(ctx, as[0].ID)
	must(t, s.DeleteUser(ctx, as[0].ID, us[0].ID), "DeleteUser")
	if _, err := s.Invitation(ctx, []byte("boot-c"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a bootstrap invitation after DeleteBootstrapInvitations: %v, want ErrNotFound", err)
	}
}

// DeleteExpired forgets the sessions and invitations expired at now, and
// keeps the others.
func testDeleteExpired(t *testing.T, newStore Constructor) {
	s, _ := newStore(t)
	newAccount(t, s, "acct_1", store.AccountStandard)
	newUser(t, s, "usr_1", "acct_1", "owner@example.com", store.RoleOwner)
	now := t0.Add(time.Hour)
	for i, in := range []time.Duration{-time.Minute, 0, time.Nanosecond} {
		newSession(t, s, fmt.Sprint("s", i), "usr_1", now.Add(in))
		must(t, s.CreateInvitation(ctx, store.Invitation{TokenHash: []byte(fmt.Sprint("i", i)), AccountID: "acct_1", Email: "x@example.com",
			Role: store.RoleViewer, CreatedAt: t0, ExpiresAt: now.Add(in)}), "CreateInvitation")
	}
	must(t, s.DeleteExpired(ctx, now), "DeleteExpired")
	for i := range 3 {
		// Looked up as of long before: found only if it is still kept.
		_, _, errS := s.SessionByHash(ctx, []byte(fmt.Sprint("s", i)), t0)
		_, errI := s.Invitation(ctx, []byte(fmt.Sprint("i", i)), t0)
		if kept := i == 2; (errS == nil) != kept || (errI == nil) != kept {
			t.Errorf("session and invitation %d after DeleteExpired: %v, %v; want kept %v", i, errS, errI, kept)
		}
	}
}
