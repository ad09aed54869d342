package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/aivis/aivis/core/text"
	pb "github.com/aivis/aivis/plugins/proto/connectorv1"
)

// Handshake keeps a connector binary from being run as anything else, and
// anything else from being run as a connector.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "AIVIS_CONNECTOR_PLUGIN",
	MagicCookieValue: "d2b9f6c1-aivis-connector",
}

// PluginName is the name the connector is dispensed under.
const PluginName = "connector"

// ProtocolVersions are the protocol versions this SDK speaks, newest last;
// the host and the plugin agree on the newest both know.
var ProtocolVersions = []int{1}

// Plugins is the plugin set of each protocol version, for plugin.Serve and
// plugin.ClientConfig.VersionedPlugins.
func Plugins(c Connector) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{1: {PluginName: &grpcPlugin{impl: c}}}
}

// Serve runs the connector as a plugin until the server that started it
// ends it or goes away. It does not return.
func Serve(c Connector) {
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintln(os.Stderr, "this is an aivis connector plugin: the aivis server runs it; see docs/plugin-sdk.md")
		os.Exit(1)
	}
	go watchParent(os.Getppid(), time.Second)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: Plugins(c),
		GRPCServer:       plugin.DefaultGRPCServer,
	})
	os.Exit(0)
}

// watchParent ends the plugin when its parent process is gone (the
// server was killed), so that no plugin outlives the server.
func watchParent(parent int, every time.Duration) {
	for range time.Tick(every) {
		if os.Getppid() != parent {
			os.Exit(0)
		}
	}
}

// grpcPlugin binds a Connector to the protocol, on either side.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl Connector
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterConnectorServer(s, &server{impl: p.impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Client{rpc: pb.NewConnectorClient(c)}, nil
}

// server serves a Connector over gRPC in the plugin process.
type server struct {
	pb.UnimplementedConnectorServer
	impl Connector
}

func (s *server) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	i := s.impl.Info()
	return &pb.InfoResponse{Name: i.Name, Kind: i.Kind, Version: i.Version, DisplayName: i.DisplayName,
		Description: i.Description, SettingsSchema: i.SettingsSchema, SecretFields: i.SecretFields, DestinationFields: i.DestinationFields,
		MaxBatch: int32(i.MaxBatch)}, nil
}

func (s *server) ValidateSettings(ctx context.Context, r *pb.ValidateSettingsRequest) (*pb.ValidateSettingsResponse, error) {
	if !json.Valid(r.Settings) {
		return &pb.ValidateSettingsResponse{Errors: []*pb.FieldError{{Field: "", Message: "settings must be a JSON object"}}}, nil
	}
	var out pb.ValidateSettingsResponse
	for _, fe := range s.impl.ValidateSettings(ctx, r.Settings) {
		out.Errors = append(out.Errors, &pb.FieldError{Field: text.Clean(fe.Field, 0), Message: text.Clean(fe.Message, 0)})
	}
	return &out, nil
}

func (s *server) TestConnection(ctx context.Context, r *pb.DeliverRequest) (*pb.DeliverResponse, error) {
	evs := fromPB(r.Events)
	if len(evs) != 1 {
		return nil, errors.New("a test carries one event")
	}
	var res Result
	if t, ok := s.impl.(Tester); ok {
		res = t.Test(ctx, r.Settings, evs[0])
	} else {
		rs := s.impl.Deliver(ctx, r.Settings, evs)
		if len(rs) != 1 {
			return nil, fmt.Errorf("the connector returned %d results for 1 event", len(rs))
		}
		res = rs[0]
	}
	return &pb.DeliverResponse{Results: []*pb.Result{toPBResult(evs[0].ID, res)}}, nil
}

func (s *server) Deliver(ctx context.Context, r *pb.DeliverRequest) (*pb.DeliverResponse, error) {
	evs := fromPB(r.Events)
	rs := s.impl.Deliver(ctx, r.Settings, evs)
	if len(rs) != len(evs) {
		return nil, fmt.Errorf("the connector returned %d results for %d events", len(rs), len(evs))
	}
	out := &pb.DeliverResponse{Results: make([]*pb.Result, len(rs))}
	for i, res := range rs {
		out.Results[i] = toPBResult(evs[i].ID, res)
	}
	return out, nil
}

func fromPB(es []*pb.Event) []Event {
	out := make([]Event, len(es))
	for i, e := range es {
		out[i] = Event{ID: e.Id, Kind: e.Kind, Timestamp: time.Unix(0, e.TimestampUnixNano).UTC(), Body: e.Body,
			AccountID: e.AccountId, ClientID: e.ClientId, Domain: e.Domain}
	}
	return out
}

func toPB(es []Event) []*pb.Event {
	out := make([]*pb.Event, len(es))
	for i, e := range es {
		out[i] = &pb.Event{Id: e.ID, Kind: e.Kind, TimestampUnixNano: e.Timestamp.UnixNano(), Body: e.Body,
			AccountId: e.AccountID, ClientId: e.ClientID, Domain: e.Domain}
	}
	return out
}

// toPBResult is a result as the protocol carries it. Its reason is sent as
// text: it often holds a destination's answer, which may be any bytes,
// and a protobuf string that is not UTF-8 would fail the whole reply.
func toPBResult(id string, r Result) *pb.Result {
	return &pb.Result{EventId: id, Outcome: pb.Result_Outcome(r.Outcome), RetryAfterMs: r.RetryAfter.Milliseconds(),
		Reason: text.Clean(r.Reason, 0)}
}

func fromPBResult(r *pb.Result) (Result, error) {
	o := Outcome(r.Outcome)
	if o < Delivered || o > Gone {
		return Result{}, fmt.Errorf("unknown outcome %d", r.Outcome)
	}
	return Result{Outcome: o, RetryAfter: time.Duration(r.RetryAfterMs) * time.Millisecond, Reason: r.Reason}, nil
}

// Client is a connector seen from the server: the host dispenses one per
// plugin process. Its errors are the plugin's failures (it crashed, hung
// past the deadline, or broke the protocol), distinct from a Result.
type Client struct {
	rpc pb.ConnectorClient
}

// Info asks the plugin to describe itself.
func (c *Client) Info(ctx context.Context) (Info, error) {
	r, err := c.rpc.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		return Info{}, err
	}
	return Info{Name: r.Name, Kind: r.Kind, Version: r.Version, DisplayName: r.DisplayName, Description: r.Description,
		SettingsSchema: r.SettingsSchema, SecretFields: r.SecretFields, DestinationFields: r.DestinationFields,
		MaxBatch: max(int(r.MaxBatch), 1)}, nil
}

// ValidateSettings asks the plugin what is wrong with settings.
func (c *Client) ValidateSettings(ctx context.Context, settings json.RawMessage) ([]FieldError, error) {
	r, err := c.rpc.ValidateSettings(ctx, &pb.ValidateSettingsRequest{Settings: settings})
	if err != nil {
		return nil, err
	}
	out := make([]FieldError, len(r.Errors))
	for i, fe := range r.Errors {
		out[i] = FieldError{Field: fe.Field, Message: fe.Message}
	}
	return out, nil
}

// Test delivers one test event.
func (c *Client) Test(ctx context.Context, settings json.RawMessage, ev Event) (Result, error) {
	r, err := c.rpc.TestConnection(ctx, &pb.DeliverRequest{Settings: settings, Events: toPB([]Event{ev})})
	if err != nil {
		return Result{}, err
	}
	if len(r.Results) != 1 {
		return Result{}, fmt.Errorf("the plugin returned %d results for a test", len(r.Results))
	}
	return fromPBResult(r.Results[0])
}

// Deliver delivers events and returns one result per event.
func (c *Client) Deliver(ctx context.Context, settings json.RawMessage, events []Event) ([]Result, error) {
	r, err := c.rpc.Deliver(ctx, &pb.DeliverRequest{Settings: settings, Events: toPB(events)})
	if err != nil {
		return nil, err
	}
	if len(r.Results) != len(events) {
		return nil, fmt.Errorf("the plugin returned %d results for %d events", len(r.Results), len(events))
	}
	out := make([]Result, len(events))
	for i, pr := range r.Results {
		if pr.EventId != events[i].ID {
			return nil, fmt.Errorf("the plugin's result %d is for %q, not %q", i, pr.EventId, events[i].ID)
		}
		if out[i], err = fromPBResult(pr); err != nil {
			return nil, err
		}
	}
	return out, nil
}
