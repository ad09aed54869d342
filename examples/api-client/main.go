// Command api-client shows the aivis Go client at work: it reads the budget
// status, creates a content request, lists requests, waits for the one it
// made to be analysed and reads the domain's visibility.
//
//	AIVIS_API_KEY=svc_... AIVIS_API_SECRET=... go run ./examples/api-client -domain example.com
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/randid"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "api-client:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("api-client", flag.ContinueOnError)
	baseURL := fs.String("base-url", "https://localhost:8443", "aivis server")
	caFile := fs.String("ca-file", "aivis-data/tls/cert.pem", "certificate to trust (the server's self-signed one)")
	domain := fs.String("domain", "example.com", "website domain")
	budget := fs.Float64("budget", 10, "budget of the content request, in dollars")
	if err := fs.Parse(args); err != nil {
		return err
	}
	key, secret := getenv("AIVIS_API_KEY"), getenv("AIVIS_API_SECRET")
	if key == "" || secret == "" {
		return fmt.Errorf("set AIVIS_API_KEY and AIVIS_API_SECRET")
	}
	opts := []client.Option{client.WithKey(key, secret)}
	if *caFile != "" {
		opts = append(opts, client.WithCAFile(*caFile))
	}
	c, err := client.New(*baseURL, opts...)
	if err != nil {
		return err
	}

	st, err := c.BudgetStatus(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tier %s: %d of %d requests left this minute; $%s of $%s left this month\n",
		st.QuotaTier, st.Remaining.ThisMinute, st.RateLimits.PerMinute, st.Budget.Remaining, st.Budget.MonthlyLimit)

	cr, err := c.CreateContentRequest(ctx, client.CreateContentRequest{
		Domain: *domain, Budget: client.Dollars(*budget), Type: client.TypeAnalyze,
		Content: Content, TargetQueries: []string{"what is " + *domain},
	}, client.IdempotencyKey("api-client-"+randid.String(16)))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "created %s for %s with a budget of $%s (%s)\n", cr.ID, cr.Domain, cr.Budget, cr.Status)

	n := 0
	for item, err := range c.ContentRequests(ctx, client.ListParams{Limit: 50}) {
		if err != nil {
			return err
		}
		n++
		fmt.Fprintf(stdout, "  %s %-10s %s $%s\n", item.ID, item.Status, item.Domain, item.Budget)
	}
	fmt.Fprintf(stdout, "%d content requests\n", n)

	// The server analyses it in the background: wait until it has ended.
	for cr.Status == client.StatusQueued || cr.Status == client.StatusProcessing {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		if cr, err = c.GetContentRequest(ctx, cr.ID); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s is %s; spent $%s, $%s reserved\n", cr.ID, cr.Status, cr.Spent, cr.Reserved)
	var res struct {
		Score    int `json:"score_before"`
		Analysis struct {
			Findings []struct {
				Fix string `json:"fix"`
			} `json:"findings"`
		} `json:"analysis"`
	}
	if err := json.Unmarshal(cr.Result, &res); err == nil && cr.Status == client.StatusCompleted {
		fmt.Fprintf(stdout, "AI-citability score %d/100, %d findings\n", res.Score, len(res.Analysis.Findings))
		if len(res.Analysis.Findings) > 0 {
			fmt.Fprintf(stdout, "first fix: %s\n", res.Analysis.Findings[0].Fix)
		}
	}

	v, err := c.Visibility(ctx, *domain)
	switch {
	case client.IsCode(err, "NOT_FOUND"):
		fmt.Fprintf(stdout, "%s: no reading yet\n", *domain)
	case err != nil:
		return err
	default:
		fmt.Fprintf(stdout, "%s: visibility %d/100, sentiment %s\n", v.Domain, v.VisibilityScore, v.Sentiment)
	}
	return nil
}

// Content is the text the example asks aivis to analyse.
const Content = `# Example Domain

This domain is for use in illustrative examples in documents. You may use it
in literature without prior coordination or asking for permission.`
