package api

import (
	"net/http"

	"github.com/aivis/aivis/client"
)

// listConnectors lists the connector kinds this server runs, with the
// settings schema of each and its health, here and on every instance.
func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request) {
	page := client.List[client.ConnectorKind]{Items: []client.ConnectorKind{}}
	if s.hub != nil {
		for _, c := range s.hub.Connectors() {
			k := client.ConnectorKind{Name: c.Record.Name, Kind: c.Record.Kind,
				DisplayName: c.Record.DisplayName, Description: c.Info.Description, Version: c.Record.Version,
				SettingsSchema: c.Info.SettingsSchema, SecretFields: nonNilList(c.Info.SecretFields),
				DestinationFields: nonNilList(c.Info.DestinationFields), Health: client.ConnectorHealth{State: c.Health.State,
					Restarts: c.Health.Restarts, Problem: optional(c.Problem)}, Instances: []client.ConnectorInstance{}}
			for _, i := range c.Instances {
				k.Instances = append(k.Instances, client.ConnectorInstance{Instance: i.Instance, CheckedAt: i.CheckedAt,
					ConnectorHealth: client.ConnectorHealth{State: i.State, Restarts: i.Restarts, Problem: optional(i.Problem)}})
			}
			page.Items = append(page.Items, k)
		}
	}
	writeJSON(w, http.StatusOK, page)
}
