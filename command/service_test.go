package command

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// serviceServer answers the service catalog's paths from one service
// "web" with two instances, and records the requests.
type serviceServer struct {
	mu   sync.Mutex
	seen []string
	regs []*api.ServiceRegistration
}

func newServiceServer(t *testing.T) *serviceServer {
	t.Helper()
	s := &serviceServer{regs: []*api.ServiceRegistration{
		{ID: "_nomad-task-aaaaaaaa-1111-group-web-web-http", ServiceName: "web", Namespace: "default", NodeID: "nnnnnnnn-2222",
			Datacenter: "dc1", JobID: "shop", AllocID: "aaaaaaaa-1111", Tags: []string{"v1", "edge"}, Address: "10.0.0.1", Port: 8080},
		{ID: "_nomad-task-bbbbbbbb-3333-group-web-web-http", ServiceName: "web", Namespace: "default", NodeID: "nnnnnnnn-2222",
			Datacenter: "dc1", JobID: "shop", AllocID: "bbbbbbbb-3333", Tags: []string{"v1"}, Address: "10.0.0.1", Port: 8081},
	}}
	serveCLI(t, http.HandlerFunc(s.serve))
	return s
}

// serveCLI serves h to the CLI of this test: NOMAD_ADDR points at it, and
// no namespace, region or token comes from the environment.
func serveCLI(t *testing.T, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_ADDR", srv.URL)
	for _, v := range []string{"NOMAD_NAMESPACE", "NOMAD_REGION", "NOMAD_TOKEN"} {
		t.Setenv(v, "")
	}
}

func (s *serviceServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	w.Header().Set("X-Nomad-Index", "7")
	switch {
	case r.URL.Path == "/v1/services":
		out := []*api.ServiceRegistrationListStub{}
		if len(s.regs) > 0 {
			out = append(out, &api.ServiceRegistrationListStub{Namespace: "default",
				Services: []*api.ServiceRegistrationStub{{ServiceName: "web", Tags: []string{"edge", "v1"}}}})
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/service/"):
		out := []*api.ServiceRegistration{}
		if strings.TrimPrefix(r.URL.Path, "/v1/service/") == "web" {
			out = s.regs
		}
		_ = json.NewEncoder(w).Encode(out)
	case r.Method == http.MethodDelete:
		id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		for i, reg := range s.regs {
			if reg.ID == id {
				s.regs = append(s.regs[:i], s.regs[i+1:]...)
				_, _ = w.Write([]byte("null"))
				return
			}
		}
		http.Error(w, "service registration not found", http.StatusNotFound)
	default:
		http.NotFound(w, r)
	}
}

// TestServiceCommands: drover service list|info|delete, their outputs,
// flags and exit codes, as nomad service has them.
func TestServiceCommands(t *testing.T) {
	s := newServiceServer(t)

	code, out, errOut := runCmd("service", "list")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Service Name  Tags\nweb           [edge,v1]\n", out)
	code, out, _ = runCmd("service", "list", "-namespace=*")
	require.Equal(t, 0, code)
	require.Equal(t, "Service Name  Namespace  Tags\nweb           default    [edge,v1]\n", out)
	t.Setenv("NOMAD_NAMESPACE", "*")
	code, out, _ = runCmd("service", "list")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Namespace", "NOMAD_NAMESPACE=* lists every namespace too")
	t.Setenv("NOMAD_NAMESPACE", "")
	code, out, _ = runCmd("service", "list", "-json")
	require.Equal(t, 0, code)
	var stubs []*api.ServiceRegistrationListStub
	require.NoError(t, json.Unmarshal([]byte(out), &stubs))
	require.Equal(t, "web", stubs[0].Services[0].ServiceName)
	code, out, _ = runCmd("service", "list", "-t", `{{range .}}{{.Namespace}}{{end}}`)
	require.Equal(t, 0, code)
	require.Equal(t, "default", strings.TrimSpace(out))
	code, _, errOut = runCmd("service", "list", "-json", "-t", "x")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Both json and template formatting are not allowed")
	code, _, _ = runCmd("service", "list", "extra")
	require.Equal(t, 1, code, "list takes no argument")

	code, out, errOut = runCmd("service", "info", "web")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Job ID  Address        Tags       Node ID   Alloc ID\n"+
		"shop    10.0.0.1:8080  [v1,edge]  nnnnnnnn  aaaaaaaa\n"+
		"shop    10.0.0.1:8081  [v1]       nnnnnnnn  bbbbbbbb\n", out)
	code, out, _ = runCmd("service", "info", "-verbose", "web")
	require.Equal(t, 0, code)
	require.Contains(t, out, "ID           = _nomad-task-aaaaaaaa-1111-group-web-web-http\n")
	require.Contains(t, out, "Alloc ID     = aaaaaaaa-1111\n")
	require.Contains(t, out, "Datacenter   = dc1\n")
	code, _, _ = runCmd("service", "info", "-filter", `Port == 8080`, "-per-page", "1", "web")
	require.Equal(t, 0, code)
	require.Contains(t, s.seen[len(s.seen)-1], "filter=Port+%3D%3D+8080")
	require.Contains(t, s.seen[len(s.seen)-1], "per_page=1")
	code, out, _ = runCmd("service", "info", "nope")
	require.Equal(t, 0, code)
	require.Equal(t, "No service registrations found\n", out)
	code, _, errOut = runCmd("service", "info")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "This command takes one argument: <service_name>")

	code, _, errOut = runCmd("service", "delete", "web")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "two arguments")
	code, _, errOut = runCmd("service", "delete", "web", "missing")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Error deleting service registration")
	code, out, errOut = runCmd("service", "delete", "web", "_nomad-task-aaaaaaaa-1111-group-web-web-http")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "Successfully deleted service registration\n", out)
	require.Len(t, s.regs, 1)
}
