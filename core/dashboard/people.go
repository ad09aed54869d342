package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/aivis/aivis/core/accounts"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/people"
	"github.com/aivis/aivis/core/store"
)

func setSession(w http.ResponseWriter, token string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: token, Path: "/", MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// safeNext keeps a redirect on this site: a path, with no character a
// browser drops or reads as a slash (it drops tabs and newlines, so
// "/\t/evil.example" would take it to //evil.example).
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsFunc(next, func(r rune) bool { return r == '\\' || r < 0x20 || r == 0x7f }) {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" {
		return "/"
	}
	return next
}

type signInData struct {
	Email string
	Next  string
}

func (s *Dashboard) signInPage(w http.ResponseWriter, r *http.Request) {
	if viewerOf(r) != nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "signin", page{Title: "Sign in", D: signInData{Next: safeNext(r.URL.Query().Get("next"))}})
}

func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.IPv6Unspecified()
	}
	return ap.Addr().Unmap()
}

func (s *Dashboard) signIn(w http.ResponseWriter, r *http.Request) {
	email, next := r.PostFormValue("email"), safeNext(r.PostFormValue("next"))
	taken, err := takeFailures(r.Context(), s.Now(), claim{guard: s.Guard, subject: limits.AddrSubject(s.ClientAddr(r))},
		claim{guard: s.emails, subject: limits.EmailSubject(email)})
	var in people.SignedIn
	if err == nil {
		in, err = s.People.SignIn(r.Context(), email, r.PostFormValue("password"))
		if !errors.Is(err, people.ErrSignIn) {
			giveBack(r.Context(), taken)
		}
	}
	if err != nil {
		p, status := &problem{Message: "The email or password is wrong."}, http.StatusUnauthorized
		if !errors.Is(err, people.ErrSignIn) {
			p, status = s.problemOf(r, err)
		}
		s.render(w, r, status, "signin", page{Title: "Sign in", Problem: p, D: signInData{Email: email, Next: next}})
		return
	}
	// A session the browser had before is ended: the new one has its own
	// token (no fixation).
	if v := viewerOf(r); v != nil {
		_ = s.People.SignOut(r.Context(), v.Token)
	}
	setSession(w, in.Token, int(people.SessionLifetime.Seconds()))
	s.Log.Info("dashboard: signed in", "user", in.User.ID, "account", in.User.AccountID)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Dashboard) signOut(w http.ResponseWriter, r *http.Request) {
	if err := s.People.SignOut(r.Context(), viewerOf(r).Token); err != nil {
		s.failWith(w, r, err)
		return
	}
	setSession(w, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

type joinData struct {
	Token      string
	Invitation store.Invitation
	Bootstrap  bool
	Email      string
	Account    string
	Tiers      []string
	Tier       string
	Agency     bool
}

func (s *Dashboard) joinPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	inv, err := s.People.Invitation(r.Context(), token)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "join", page{Title: "Join aivis", D: joinData{Token: token, Invitation: inv,
		Bootstrap: inv.AccountID == "", Email: inv.Email, Tiers: limits.TierNames(), Tier: "starter"}})
}

func (s *Dashboard) join(w http.ResponseWriter, r *http.Request) {
	in := people.Accept{Token: r.PostFormValue("token"), Email: r.PostFormValue("email"), Password: r.PostFormValue("password"),
		AccountName: r.PostFormValue("account_name"), Tier: r.PostFormValue("tier"), Agency: r.PostFormValue("agency") == "on"}
	inv, err := s.People.Invitation(r.Context(), in.Token)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	if in.Password != r.PostFormValue("password_again") {
		s.render(w, r, http.StatusUnprocessableEntity, "join", page{Title: "Join aivis",
			Problem: &problem{Message: "The two passwords differ."},
			D: joinData{Token: in.Token, Invitation: inv, Bootstrap: inv.AccountID == "", Email: in.Email, Account: in.AccountName,
				Tiers: limits.TierNames(), Tier: in.Tier, Agency: in.Agency}})
		return
	}
	u, err := s.People.AcceptInvitation(r.Context(), in)
	if err != nil {
		p, status := s.problemOf(r, err)
		s.render(w, r, status, "join", page{Title: "Join aivis", Problem: p,
			D: joinData{Token: in.Token, Invitation: inv, Bootstrap: inv.AccountID == "", Email: in.Email, Account: in.AccountName,
				Tiers: limits.TierNames(), Tier: in.Tier, Agency: in.Agency}})
		return
	}
	signed, err := s.People.SignIn(r.Context(), u.Email, in.Password)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	if v := viewerOf(r); v != nil {
		_ = s.People.SignOut(r.Context(), v.Token)
	}
	setSession(w, signed.Token, int(people.SessionLifetime.Seconds()))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Dashboard) accountPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "account", page{Title: "Your account", Nav: "account"})
}

func (s *Dashboard) changePassword(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	next := r.PostFormValue("new_password")
	if next != r.PostFormValue("new_password_again") {
		s.render(w, r, http.StatusUnprocessableEntity, "account", page{Title: "Your account", Nav: "account",
			Problem: &problem{Message: "The two new passwords differ."}})
		return
	}
	// Wrong current passwords count with failed sign-ins: a stolen session
	// is no way to guess the password without limit.
	taken, err := takeFailures(r.Context(), s.Now(), claim{guard: s.emails, subject: limits.EmailSubject(v.User.Email)})
	if err == nil {
		err = s.People.ChangePassword(r.Context(), v.User, v.Token, r.PostFormValue("current_password"), next)
		if fe, ok := fault.As(err); !ok || !slices.ContainsFunc(fe.Details, func(d fault.FieldError) bool { return d.Field == "current_password" }) {
			giveBack(r.Context(), taken)
		}
	}
	if err != nil {
		p, status := s.problemOf(r, err)
		s.render(w, r, status, "account", page{Title: "Your account", Nav: "account", Problem: p})
		return
	}
	redirect(w, r, "/account", "password")
}

// deleteAccount deletes the viewer's account with everything it owns,
// once the owner has typed its name: the users and their sessions go with
// it, so the browser is signed out.
func (s *Dashboard) deleteAccount(w http.ResponseWriter, r *http.Request) {
	a := viewerOf(r).Account
	if strings.TrimSpace(r.PostFormValue("confirm_name")) != a.Name {
		s.render(w, r, http.StatusUnprocessableEntity, "account", page{Title: "Your account", Nav: "account",
			Problem: &problem{Message: "The name typed is not the account's name: nothing is deleted."}})
		return
	}
	if err := accounts.Delete(r.Context(), s.Store, a.ID); err != nil {
		p, status := s.problemOf(r, err)
		s.render(w, r, status, "account", page{Title: "Your account", Nav: "account", Problem: p})
		return
	}
	s.Log.InfoContext(r.Context(), "account deleted from the dashboard", "account", a.ID, "user", viewerOf(r).User.ID)
	setSession(w, "", -1)
	http.Redirect(w, r, "/signin?done=account", http.StatusSeeOther)
}

type membersData struct {
	Users       []store.User
	Invitations []store.Invitation
	Roles       []string
	Link        string // a new invitation's link, shown once
}

func (s *Dashboard) members(r *http.Request) (membersData, error) {
	v := viewerOf(r)
	us, err := s.Store.ListUsers(r.Context(), v.Account.ID)
	if err != nil {
		return membersData{}, err
	}
	invs, err := s.Store.ListInvitations(r.Context(), v.Account.ID, s.Now())
	return membersData{Users: us, Invitations: invs, Roles: people.Roles}, err
}

func (s *Dashboard) membersPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.members(r)
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "members", page{Title: "Members", Nav: "members", D: d})
}

func (s *Dashboard) origin(r *http.Request) string {
	if s.PublicURL != "" {
		return strings.TrimSuffix(s.PublicURL, "/")
	}
	return "https://" + r.Host
}

func (s *Dashboard) invite(w http.ResponseWriter, r *http.Request) {
	token, err := s.People.Invite(r.Context(), viewerOf(r).User, r.PostFormValue("email"), r.PostFormValue("role"))
	d, lerr := s.members(r)
	if lerr != nil {
		s.failWith(w, r, lerr)
		return
	}
	if err != nil {
		p, status := s.problemOf(r, err)
		s.render(w, r, status, "members", page{Title: "Members", Nav: "members", Problem: p, D: d})
		return
	}
	d.Link = s.origin(r) + "/join?token=" + token
	s.render(w, r, http.StatusOK, "members", page{Title: "Members", Nav: "members", Notice: "The invitation is made: send this link to the new member (it is shown once and works for 7 days).", D: d})
}

func (s *Dashboard) setRole(w http.ResponseWriter, r *http.Request) {
	if err := s.People.SetRole(r.Context(), viewerOf(r).User, chi.URLParam(r, "id"), r.PostFormValue("role")); err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, "/members", "role")
}

func (s *Dashboard) removeMember(w http.ResponseWriter, r *http.Request) {
	if err := s.People.Remove(r.Context(), viewerOf(r).User, chi.URLParam(r, "id")); err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, "/members", "removed")
}

// withdrawInvitation deletes an open invitation of the account, named by
// its token's hash (the page never has the token itself).
func (s *Dashboard) withdrawInvitation(w http.ResponseWriter, r *http.Request) {
	hash, err := hex.DecodeString(chi.URLParam(r, "hash"))
	if err == nil && len(hash) == sha256.Size {
		err = s.People.Withdraw(r.Context(), viewerOf(r).User, hash)
	} else {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "There is no such invitation.")
		return
	} else if err != nil {
		s.failWith(w, r, err)
		return
	}
	redirect(w, r, "/members", "withdrawn")
}
