package visibility_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/fault"
	"github.com/aivis/aivis/core/visibility"
)

func code(err error) fault.Code {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe.Code
	}
	return ""
}

func TestMonitoredDomains(t *testing.T) {
	_, p, db := setup(t) // a Starter account: 5 domains
	s := &visibility.Domains{Store: db, Now: time.Now}

	d, err := s.Create(ctx, p, client.CreateDomain{Domain: "Shop.Example.CO.UK", Competitors: []string{" Rival ", "rival", "", "Other"},
		Topics: []string{"garden tools"}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Domain != "shop.example.co.uk" || !slices.Equal(d.Brands, []string{"Example"}) || !slices.Equal(d.Competitors, []string{"Rival", "Other"}) ||
		d.NextScanAt.IsZero() || !strings.HasPrefix(d.ID, "dom_") {
		t.Fatalf("created %+v", d)
	}
	if _, err := s.Create(ctx, p, client.CreateDomain{Domain: "shop.example.co.uk"}); code(err) != fault.AlreadyExists {
		t.Fatalf("a domain twice: %v", err)
	}
	for _, bad := range []client.CreateDomain{
		{Domain: "not a domain"},
		{Domain: "ok.com", Brands: make([]string, 11)},
		{Domain: "ok.com", Prompts: []string{strings.Repeat("x", 1001)}},
		{Domain: "ok.com", ClientID: "cli_nope"},
	} {
		if _, err := s.Create(ctx, p, bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}

	// The tier's cap counts every domain of the account.
	for i := 2; i <= 5; i++ {
		if _, err := s.Create(ctx, p, client.CreateDomain{Domain: fmt.Sprintf("d%d.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Create(ctx, p, client.CreateDomain{Domain: "d6.com"}); code(err) != fault.DomainLimitReached {
		t.Fatalf("a sixth domain on Starter: %v", err)
	}
	all, next, err := s.List(ctx, p, "", "", 3)
	if err != nil || len(all) != 3 || next == "" || all[0].Domain != "d5.com" {
		t.Fatalf("list: %v %q %v", all, next, err)
	}

	// Update replaces the lists given; brands may not be emptied.
	up, err := s.Update(ctx, p, d.ID, client.UpdateDomain{Prompts: &[]string{"Which garden tool brands last longest?"}})
	if err != nil || len(up.Prompts) != 1 || !slices.Equal(up.Competitors, []string{"Rival", "Other"}) {
		t.Fatalf("update: %+v %v", up, err)
	}
	if _, err := s.Update(ctx, p, d.ID, client.UpdateDomain{Brands: &[]string{" "}}); code(err) != fault.ValidationError {
		t.Fatalf("empty brands: %v", err)
	}

	// Another account's key sees nothing of it.
	q := otherAccount(t, db)
	if _, err := s.Get(ctx, q, d.ID); code(err) != fault.NotFound {
		t.Fatalf("another account reads it: %v", err)
	}
	if err := s.Delete(ctx, q, d.ID); code(err) != fault.NotFound {
		t.Fatalf("another account deletes it: %v", err)
	}
	if _, err := s.Create(ctx, q, client.CreateDomain{Domain: "shop.example.co.uk"}); err != nil {
		t.Fatalf("another account monitors the same domain: %v", err)
	}

	if err := s.Delete(ctx, p, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, p, d.ID); code(err) != fault.NotFound {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := s.Create(ctx, p, client.CreateDomain{Domain: "d6.com"}); err != nil {
		t.Fatalf("a domain within the cap again: %v", err)
	}
}
