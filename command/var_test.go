package command

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/nomad/api"
)

// varServer is an in-memory /v1/var and /v1/vars with check-and-set, as
// the server answers them (409 with the stored variable).
type varServer struct {
	mu    sync.Mutex
	index uint64
	vars  map[string]*api.Variable
	seen  []string
}

func newVarServer(t *testing.T) *varServer {
	t.Helper()
	vs := &varServer{index: 10, vars: map[string]*api.Variable{}}
	serveCLI(t, http.HandlerFunc(vs.serve))
	return vs
}

func (vs *varServer) serve(w http.ResponseWriter, r *http.Request) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.seen = append(vs.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	w.Header().Set("X-Nomad-Index", strconv.FormatUint(vs.index, 10))
	if r.URL.Path == "/v1/vars" {
		out := []*api.VariableMetadata{}
		for _, v := range vs.vars {
			if strings.HasPrefix(v.Path, r.URL.Query().Get("prefix")) {
				out = append(out, v.Metadata())
			}
		}
		_ = json.NewEncoder(w).Encode(out)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/var/")
	cur := vs.vars[path]
	if cas := r.URL.Query().Get("cas"); cas != "" {
		want, _ := strconv.ParseUint(cas, 10, 64)
		if (want == 0 && cur != nil) || (want != 0 && (cur == nil || cur.ModifyIndex != want)) {
			w.WriteHeader(http.StatusConflict)
			if cur == nil {
				cur = &api.Variable{Path: path}
			}
			_ = json.NewEncoder(w).Encode(cur)
			return
		}
	}
	switch r.Method {
	case http.MethodGet:
		if cur == nil {
			http.Error(w, "variable not found", http.StatusNotFound)
			return
		}
		_ = json.NewEncoder(w).Encode(cur)
	case http.MethodPut:
		var in api.Variable
		_ = json.NewDecoder(r.Body).Decode(&in)
		vs.index++
		in.Path, in.Namespace, in.ModifyIndex, in.CreateIndex = path, "default", vs.index, vs.index
		if cur != nil {
			in.CreateIndex = cur.CreateIndex
		}
		vs.vars[path] = &in
		_ = json.NewEncoder(w).Encode(&in)
	case http.MethodDelete:
		delete(vs.vars, path)
		w.WriteHeader(http.StatusNoContent)
	}
}

func runVar(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runIO(append([]string{"var"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestVarCommands: put, get, list, purge and init with nomad var's flags,
// outputs and exit codes, against the requests the server answers.
func TestVarCommands(t *testing.T) {
	vs := newVarServer(t)
	code, out, errOut := runVar(t, "", "put", "-out=none", "app/db", "user=me", "pass=-")
	if code != 0 || !strings.Contains(out, `Successfully created variable "app/db"!`) {
		t.Fatalf("put: %d %q %q", code, out, errOut)
	}
	if got := vs.vars["app/db"].Items; got["user"] != "me" || got["pass"] != "" {
		t.Fatalf("stored items %v", got)
	}
	// A value from stdin, read as is; put replaces every item.
	if code, _, errOut := runVar(t, "s3cret\n", "put", "-out=none", "app/db", "user=me", "pass=-"); code != 0 {
		t.Fatalf("put from stdin: %s", errOut)
	}
	if got := vs.vars["app/db"].Items["pass"]; got != "s3cret\n" {
		t.Fatalf("pass = %q", got)
	}
	code, out, errOut = runVar(t, "", "get", "-item", "user", "app/db")
	if code != 0 || out != "me" {
		t.Fatalf("get -item: %d %q %q", code, out, errOut)
	}
	code, out, _ = runVar(t, "", "get", "-out=json", "app/db")
	var got api.Variable
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Path != "app/db" {
		t.Fatalf("get -out=json: %d %q", code, out)
	}
	if code, _, errOut := runVar(t, "", "get", "missing"); code != 1 || !strings.Contains(errOut, "Variable not found") {
		t.Fatalf("get missing: %d %q", code, errOut)
	}

	// A stale check index: the conflict explanation and exit 1.
	code, _, errOut = runVar(t, "", "put", "-check-index=3", "app/db", "user=you")
	if code != 1 || !strings.Contains(errOut, "Check-and-Set conflict") || !strings.Contains(errOut, "-check-index="+strconv.FormatUint(got.ModifyIndex, 10)) {
		t.Fatalf("stale put: %d %q", code, errOut)
	}
	if vs.vars["app/db"].Items["user"] != "me" {
		t.Fatal("a conflicting put changed the variable")
	}

	// An HCL specification on stdin.
	spec := "path = \"app/web\"\nitems {\n  port = \"8080\"\n}\n"
	if code, _, errOut := runVar(t, spec, "put", "-in=hcl", "-out=none", "-", "extra=1"); code != 0 {
		t.Fatalf("put spec: %s", errOut)
	}
	if it := vs.vars["app/web"].Items; it["port"] != "8080" || it["extra"] != "1" {
		t.Fatalf("spec items %v", it)
	}
	code, out, _ = runVar(t, "", "list", "-out=terse", "app/")
	lines := strings.Fields(out)
	if code != 0 || len(lines) != 2 {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, out, _ := runVar(t, "", "purge", "app/web"); code != 0 || !strings.Contains(out, `Successfully purged variable "app/web"!`) {
		t.Fatalf("purge: %d %q", code, out)
	}
	if _, ok := vs.vars["app/web"]; ok {
		t.Fatal("purge left the variable")
	}
	if code, _, errOut := runVar(t, "", "purge", "-check-index=1", "app/db"); code != 1 || !strings.Contains(errOut, "Check-and-Set conflict") {
		t.Fatalf("stale purge: %d %q", code, errOut)
	}

	t.Chdir(t.TempDir())
	if code, out, _ := runVar(t, "", "init"); code != 0 || !strings.Contains(out, "spec.nv.hcl") {
		t.Fatalf("init: %d %q", code, out)
	}
	data, err := os.ReadFile("spec.nv.hcl")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := parseVariableHCL("spec.nv.hcl", data)
	if err != nil || parsed.Path != "path/to/variable" || parsed.Items["key1"] != "value1" {
		t.Fatalf("init's spec does not read back: %v %+v", err, parsed)
	}
	if code, _, errOut := runVar(t, "", "init"); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Fatalf("second init: %d %q", code, errOut)
	}
}
