package dashboard

import (
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/aivis/aivis/client"
	"github.com/aivis/aivis/core/csvexport"
	"github.com/aivis/aivis/core/limits"
	"github.com/aivis/aivis/core/store"
)

// window is one rate-limit window against its limit.
type window struct {
	Name    string
	Count   int
	Limit   int
	Percent int
	Resets  time.Time
}

type usageData struct {
	Tier      limits.Tier
	Windows   []window
	Month     string
	Limit     client.USD
	Spent     client.USD
	Reserved  client.USD
	Remaining client.USD
	Percent   int
	Active    int
	Hourly    Chart
	Daily     Chart
	ByClient  *Chart
	Client    string // the client the page is about, if any
	// The per-key hourly counts of the last 30 days behind the charts,
	// with the names of the keys and clients, for the CSV.
	counts                []store.KeyUsage
	keyNames, clientNames map[string]string
}

var seriesClasses = []string{"s0", "s1", "s2", "s3", "s4", "s5"}

// usage gathers an account's limits, windows, budget and charts; with
// clientID, the charts are of that client's keys only.
func (s *Dashboard) usage(r *http.Request, a store.Account, clientID string) (usageData, error) {
	t, _ := limits.TierByName(a.Tier)
	now := s.Now().UTC()
	d := usageData{Tier: t, Month: limits.Month(now), Client: clientID}
	if s.Counter != nil {
		dec, err := s.Counter.Peek(r.Context(), a.ID, t.Limits(), now)
		if err != nil {
			return d, err
		}
		for i, name := range []string{"This minute", "This hour", "Today"} {
			w := window{Name: name, Count: dec.Count[i], Limit: dec.Limit[i], Resets: time.Unix(dec.Reset[i], 0).UTC()}
			if w.Limit > 0 {
				w.Percent = min(100, w.Count*100/w.Limit)
			}
			d.Windows = append(d.Windows, w)
		}
	}
	b, active, err := s.Store.Budget(r.Context(), a.ID, d.Month)
	if err != nil {
		return d, err
	}
	committed := b.Spent + b.Reserved
	d.Limit, d.Spent, d.Reserved = client.USD(t.MonthlyBudget), client.USD(b.Spent), client.USD(b.Reserved)
	d.Remaining, d.Active = client.USD(t.BudgetRemaining(committed)), active
	if t.MonthlyBudget > 0 {
		d.Percent = int(min(100, committed*100/t.MonthlyBudget))
	}

	ks, err := s.Store.ListKeys(r.Context(), a.ID)
	if err != nil {
		return d, err
	}
	names := map[string]string{}
	for _, k := range ks {
		names[k.ID] = k.Name + " (" + k.Hint + ")"
	}
	cs, err := s.Store.ListClients(r.Context(), a.ID)
	if err != nil {
		return d, err
	}
	clientNames := map[string]string{"": "Account keys"}
	for _, c := range cs {
		clientNames[c.ID] = c.Name
	}
	hourStart := now.Truncate(time.Hour).Add(-47 * time.Hour)
	dayStart := now.Truncate(24*time.Hour).AddDate(0, 0, -29)
	us, err := s.Store.UsageSince(r.Context(), a.ID, dayStart)
	if err != nil {
		return d, err
	}
	d.counts, d.keyNames, d.clientNames = us, names, clientNames
	if clientID != "" {
		var mine []store.KeyUsage
		for _, u := range us {
			if u.ClientID == clientID {
				mine = append(mine, u)
			}
		}
		us = mine
	}
	d.Hourly = bucketChart("Requests per hour, last 48 hours, by key", us, hourStart, time.Hour, 48, "15h",
		func(u store.KeyUsage) string { return names[u.KeyID] })
	d.Daily = bucketChart("Requests per day, last 30 days, by key", us, dayStart, 24*time.Hour, 30, "Jan 2",
		func(u store.KeyUsage) string { return names[u.KeyID] })
	if a.Type == store.AccountAgency && clientID == "" {
		c := bucketChart("Requests per day, last 30 days, by client", us, dayStart, 24*time.Hour, 30, "Jan 2",
			func(u store.KeyUsage) string { return clientNames[u.ClientID] })
		d.ByClient = &c
	}
	return d, nil
}

// bucketChart stacks counts into n buckets of size from start, one series
// per group (the five largest, the rest as "Other").
func bucketChart(title string, us []store.KeyUsage, start time.Time, size time.Duration, n int, layout string, group func(store.KeyUsage) string) Chart {
	c := Chart{Title: title}
	for i := range n {
		c.Labels = append(c.Labels, start.Add(time.Duration(i)*size).Format(layout))
	}
	totals := map[string]int64{}
	vals := map[string][]float64{}
	for _, u := range us {
		i := int(u.Hour.Sub(start) / size)
		if u.Hour.Before(start) || i >= n {
			continue
		}
		g := group(u)
		if vals[g] == nil {
			vals[g] = make([]float64, n)
		}
		vals[g][i] += float64(u.Count)
		totals[g] += u.Count
	}
	var groups []string
	for g := range vals {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if totals[groups[i]] != totals[groups[j]] {
			return totals[groups[i]] > totals[groups[j]]
		}
		return groups[i] < groups[j]
	})
	var other []float64
	for i, g := range groups {
		if i >= len(seriesClasses)-1 && len(groups) > len(seriesClasses) {
			if other == nil {
				other = make([]float64, n)
			}
			for j, v := range vals[g] {
				other[j] += v
			}
			continue
		}
		c.Series = append(c.Series, Series{Name: g, Values: vals[g], Class: seriesClasses[i]})
	}
	if other != nil {
		c.Series = append(c.Series, Series{Name: "Other", Values: other, Class: seriesClasses[len(seriesClasses)-1]})
	}
	return c
}

// Total is the sum of a series.
func (s Series) Total() float64 {
	t := 0.0
	for _, v := range s.Values {
		t += v
	}
	return t
}

func (s *Dashboard) usagePage(w http.ResponseWriter, r *http.Request) {
	d, err := s.usage(r, viewerOf(r).Account, "")
	if err != nil {
		s.failWith(w, r, err)
		return
	}
	switch r.URL.Query().Get("csv") {
	case "":
	case "requests":
		writeCSV(w, "usage", usageColumns, d.rows())
		return
	default:
		s.fail(w, r, http.StatusBadRequest, "The usage page has no such table to download.")
		return
	}
	s.render(w, r, http.StatusOK, "usage", page{Title: "Usage and budget", Nav: "usage", D: d})
}

// usageColumns are the columns of the usage page's CSV: a row per key and
// hour with requests, oldest first.
var usageColumns = []string{"hour", "key_id", "key", "client_id", "client", "requests"}

func (d usageData) rows() [][]string {
	rows := make([][]string, 0, len(d.counts))
	for _, u := range d.counts {
		rows = append(rows, []string{csvexport.Time(u.Hour), u.KeyID, d.keyNames[u.KeyID], u.ClientID, d.clientNames[u.ClientID],
			strconv.FormatInt(u.Count, 10)})
	}
	return rows
}
