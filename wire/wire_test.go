package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/testutil/fill"
)

// jsonNames are the JSON names of the fields of every body and of the
// Drover types inside them: the protocol. A renamed field fails here; if
// the rename is meant, it breaks clients and servers of other versions.
// An embedded nomad/api type is listed as "(embedded *api.X)".
var jsonNames = map[string][]string{
	"wire.NodeRegisterRequest":   {"Node", "SecretID", "IntroToken", "NodeNetworks"},
	"wire.NodeRegisterResponse":  {"EvalIDs", "Index", "HeartbeatTTL"},
	"wire.NodeHeartbeatRequest":  {"Status"},
	"wire.NodeHeartbeatResponse": {"HeartbeatTTL", "Index"},
	"wire.NodeAlloc":             {"(embedded *api.Allocation)", "Job", "SignedIdentities", "PreviousNodeAddr", "MigrateToken"},
	"wire.AllocUpdateRequest":    {"Allocs"},
	"wire.ACLResolveRequest":     {"SecretID", "Namespace"},
	"wire.NodeServicesRequest":   {"Allocs"},
	"wire.AllocServices":         {"AllocID", "Services"},
	"wire.ACLResolveResponse":    {"ACLEnabled", "Management", "Capabilities", "NodeRead"},
	"wire.IdentityRenewRequest":  {"AllocID", "Task", "Identities"},
	"wire.IdentityRenewResponse": {"Tokens"},
	"wire.ImageUpdates":          {"Namespace", "JobID", "Version", "Tasks"},
	"wire.ImageClearBadRequest":  {"Digest"},
	"wire.ImageApproveRequest":   {"Digest"},
	"wire.RolloutView":           {"Job", "Deployment", "AllocColumns", "Allocs", "NodeColumns", "Nodes", "Gates"},
	"wire.DeploymentGates":       {"DeploymentID", "Gates"},
	"structs.DeploymentGate": {"PassedAt", "Passed", "Evaluations", "Failures", "PausedBy", "Gate", "Result", "Reason",
		"Checkpoint", "UpdatedAt"},
	"wire.PrefetchDirectives":     {"Directives", "Index"},
	"wire.PrefetchReportRequest":  {"Reports"},
	"structs.PrefetchDirective":   {"DeploymentID", "Namespace", "JobID", "JobVersion", "State", "Tasks"},
	"structs.PrefetchTask":        {"Group", "Task", "Driver", "Image", "Config"},
	"structs.PrefetchReport":      {"DeploymentID", "State", "Error"},
	"structs.NodeNetworkResource": {"Mode", "Device", "Addresses"},
	"structs.NodeNetworkAddress":  {"Family", "Alias", "Address", "ReservedPorts"},
	"structs.ImageRoll":           {"From", "To", "JobVersion", "Time"},
	"structs.ImageTaskStatus": {"Group", "Task", "Image", "Reference", "Pinned", "Unpinned", "Assumed",
		"AutoUpdate", "Interval", "Soak", "LastCheck", "TagDigest", "LastError", "NextCheck", "Pending",
		"PendingSince", "SoakLeft", "Mode", "Approval", "Window", "MinAge", "ImageCreated", "Waiting", "WaitingUntil",
		"WaitingFor", "Prepared", "PendingApproval", "Approved", "Bad", "LastRoll", "Checks", "Errors"},
}

// bodies has one value of every body, with every field set: Drover's
// fields by fill, nomad/api values (whose encoding is that module's) by
// hand.
func bodies() []any {
	job := new("web")
	return []any{
		withAPI(func(b *NodeRegisterRequest) { b.Node = &api.Node{ID: "n1", Name: "node-1"} }),
		withAPI[NodeRegisterResponse](nil),
		withAPI[NodeHeartbeatRequest](nil),
		withAPI[NodeHeartbeatResponse](nil),
		withAPI(func(b *NodeAlloc) {
			b.Allocation = &api.Allocation{ID: "a1", ClientStatus: "running"}
			b.Job = json.RawMessage(`{"ID":"web","Version":3}`)
		}),
		withAPI(func(b *AllocUpdateRequest) { b.Allocs = []*api.Allocation{{ID: "a1", ClientStatus: "running"}} }),
		withAPI[ACLResolveRequest](nil),
		withAPI(func(b *NodeServicesRequest) {
			b.Allocs[0].Services = []*api.ServiceRegistration{{ID: "_nomad-task-a1-web-web-http", ServiceName: "web", Port: 8080}}
		}),
		withAPI[ACLResolveResponse](nil),
		withAPI[IdentityRenewRequest](nil),
		withAPI[IdentityRenewResponse](nil),
		withAPI[ImageUpdates](nil),
		withAPI[ImageClearBadRequest](nil),
		withAPI[ImageApproveRequest](nil),
		withAPI(func(b *RolloutView) { b.Job, b.Deployment = &api.Job{ID: job}, &api.Deployment{ID: "d1"} }),
		withAPI[PrefetchDirectives](nil),
		withAPI[PrefetchReportRequest](nil),
		withAPI[DeploymentGates](nil),
	}
}

var apiPkg = reflect.TypeFor[api.Job]().PkgPath()

// withAPI fills a T but for its nomad/api values, which set sets.
func withAPI[T any](set func(*T)) *T {
	b := fill.New[T](fill.Options{
		Skip: func(t reflect.Type) bool {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			return t.PkgPath() == apiPkg
		},
		// Strings: JSON turns other values in an interface into float64s.
		Interface: func(n int) any { return strings.Repeat("x", n%7+1) },
	})
	if set != nil {
		set(b)
	}
	return b
}

// TestBodies_RoundTripWithEveryField: every body, with every field set,
// decodes as it was encoded; a field JSON drops (unexported, "-", shadowed)
// fails here.
func TestBodies_RoundTripWithEveryField(t *testing.T) {
	for _, b := range bodies() {
		v := reflect.ValueOf(b).Elem()
		t.Run(v.Type().Name(), func(t *testing.T) {
			for i := range v.NumField() {
				require.False(t, v.Field(i).IsZero(), "%s.%s is not set", v.Type().Name(), v.Type().Field(i).Name)
			}
			raw, err := json.Marshal(b)
			require.NoError(t, err)
			back := reflect.New(v.Type())
			require.NoError(t, json.Unmarshal(raw, back.Interface()))
			require.Equal(t, b, back.Interface())
		})
	}
}

// TestBodies_JSONNames holds the field names of every body and of the
// Drover types inside them.
func TestBodies_JSONNames(t *testing.T) {
	got := map[string][]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		name := t.String()
		if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "github.com/drover-project/") || got[name] != nil {
			return
		}
		got[name] = []string{}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			if f.Anonymous {
				got[name] = append(got[name], "(embedded "+f.Type.String()+")")
				continue
			}
			jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if jsonName == "" {
				jsonName = f.Name
			}
			got[name] = append(got[name], jsonName)
			walk(f.Type)
		}
	}
	for _, b := range bodies() {
		walk(reflect.TypeOf(b))
	}
	require.Equal(t, jsonNames, got)
}

// NodeAlloc's Job stands in for the embedded Allocation.Job: the JSON is
// an api.Allocation's, and DecodeJob reads it back.
func TestNodeAlloc_JobIsTheAllocationsJob(t *testing.T) {
	job := &api.Job{ID: new("web"), Version: new(uint64(3))}
	raw, err := json.Marshal(job)
	require.NoError(t, err)
	body, err := json.Marshal([]*NodeAlloc{
		{Allocation: &api.Allocation{ID: "a1"}, Job: raw, SignedIdentities: map[string]string{"t": "jwt"}},
		{Allocation: &api.Allocation{ID: "a2"}, Job: json.RawMessage("null")},
	})
	require.NoError(t, err)

	var asAPI []*api.Allocation
	require.NoError(t, json.Unmarshal(body, &asAPI))
	require.Equal(t, "web", *asAPI[0].Job.ID)
	require.Nil(t, asAPI[1].Job)

	var got []*NodeAlloc
	require.NoError(t, json.Unmarshal(body, &got))
	for _, a := range got {
		require.NoError(t, a.DecodeJob())
	}
	require.Equal(t, job, got[0].Allocation.Job)
	require.Equal(t, map[string]string{"t": "jwt"}, got[0].SignedIdentities)
	require.Nil(t, got[1].Allocation.Job)

	var empty NodeAlloc
	require.NoError(t, empty.DecodeJob())
	require.Nil(t, empty.Allocation.Job)
	bad := NodeAlloc{Job: json.RawMessage(`"not a job"`)}
	require.Error(t, bad.DecodeJob())
}

func TestNodePath(t *testing.T) {
	require.Equal(t, "/v1/internal/node/9f0c/allocs", NodePath(RouteNodeAllocs, "9f0c"))
	require.Equal(t, "/v1/internal/node/a%2Fb/heartbeat", NodePath(RouteNodeHeartbeat, "a/b"))
	require.Equal(t, RouteNodeRegister, NodePath(RouteNodeRegister, "x"), "a route without {id}")
}
