package api

import (
	"fmt"
	"net/http"

	"github.com/aivis/aivis/client"
)

// listConnectors lists the connector kinds this server runs, with the
// settings schema of each and its health, here and on every instance: its
// state, why it does not run, and the build each instance has.
func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request) {
	page := client.List[client.ConnectorKind]{Items: []client.ConnectorKind{}}
	if s.hub != nil {
		for _, c := range s.hub.Connectors() {
			k := client.ConnectorKind{Name: c.Record.Name, Kind: c.Record.Kind,
				DisplayName: c.Record.DisplayName, Description: c.Info.Description, Version: c.Record.Version,
				SettingsSchema: c.Info.SettingsSchema, SecretFields: nonNilList(c.Info.SecretFields),
				DestinationFields: nonNilList(c.Info.DestinationFields), Health: client.ConnectorHealth{State: c.Health.State,
					Restarts: c.Health.Restarts, Problem: optional(c.Problem), Build: build(c.SHA256)}, Instances: []client.ConnectorInstance{}}
			for _, i := range c.Instances {
				k.Instances = append(k.Instances, client.ConnectorInstance{Instance: i.Instance, CheckedAt: i.CheckedAt,
					ConnectorHealth: client.ConnectorHealth{State: i.State, Restarts: i.Restarts, Problem: optional(i.Problem), Build: build(i.SHA256)}})
			}
			page.Items = append(page.Items, k)
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// build is the short form of a build's SHA-256 the API shows: its first 8
// hex digits; nil for none.
func build(sum []byte) *string {
	if len(sum) < 4 {
		return nil
	}
	b := fmt.Sprintf("%x", sum[:4])
	return &b
}
