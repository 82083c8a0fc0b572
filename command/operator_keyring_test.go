package command

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// keyringServer answers the three keyring endpoints and records requests.
func keyringServer(t *testing.T) *[]string {
	t.Helper()
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("X-Nomad-Index", "7")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/operator/keyring/keys":
			_ = json.NewEncoder(w).Encode([]map[string]any{
				{"KeyID": "11111111-aaaa", "State": "inactive", "CreateTime": int64(1e18)},
				{"KeyID": "22222222-bbbb", "State": "active", "CreateTime": int64(2e18), "PublishTime": int64(2e18)},
			})
		case r.Method == http.MethodPut && r.URL.Path == "/v1/operator/keyring/rotate":
			_ = json.NewEncoder(w).Encode(map[string]any{"Key": map[string]any{"KeyID": "33333333-cccc", "State": "active"}})
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/operator/keyring/key/11111111-aaaa":
			_, _ = w.Write([]byte("{}"))
		case r.Method == http.MethodDelete:
			http.Error(w, "active root key cannot be deleted - call rotate first", http.StatusBadRequest)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("NOMAD_ADDR", srv.URL)
	return &seen
}

func TestOperatorKeyring(t *testing.T) {
	seen := keyringServer(t)
	var out, errOut bytes.Buffer
	if code := run([]string{"operator", "keyring", "list"}, &out, &errOut); code != 0 {
		t.Fatalf("list exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Key", "State", "11111111-aaaa", "inactive", "22222222-bbbb", "active"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("list output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if code := run([]string{"operator", "keyring", "rotate"}, &out, &errOut); code != 0 {
		t.Fatalf("rotate exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "33333333-cccc") {
		t.Fatalf("rotate prints the new key:\n%s", out.String())
	}

	out.Reset()
	if code := run([]string{"operator", "keyring", "remove", "-force", "11111111-aaaa"}, &out, &errOut); code != 0 {
		t.Fatalf("remove exit %d: %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"operator", "keyring", "remove", "22222222-bbbb"}, &out, &errOut); code != 1 {
		t.Fatalf("removing the active key exits 1, got %d", code)
	}
	if !strings.Contains(errOut.String(), "call rotate first") {
		t.Fatalf("the server's reason is shown: %s", errOut.String())
	}
	if code := run([]string{"operator", "keyring", "remove"}, &out, &errOut); code != 1 {
		t.Fatalf("remove without an ID is a usage error, got %d", code)
	}
	want := []string{
		"GET /v1/operator/keyring/keys?",
		"PUT /v1/operator/keyring/rotate?",
		"DELETE /v1/operator/keyring/key/11111111-aaaa?force=true",
		"DELETE /v1/operator/keyring/key/22222222-bbbb?force=false",
	}
	if strings.Join(*seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(*seen, "\n"), strings.Join(want, "\n"))
	}
}
