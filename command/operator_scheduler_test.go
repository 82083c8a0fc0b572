package command

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestOperatorSchedulerConfig: get-config prints the configuration;
// set-config changes only the flags given, with check-and-set when asked,
// and fails when the check-and-set is refused.
func TestOperatorSchedulerConfig(t *testing.T) {
	var puts []map[string]any
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Nomad-Index", "7")
		switch r.Method {
		case http.MethodGet:
			_ = json.NewEncoder(w).Encode(map[string]any{"SchedulerConfig": map[string]any{
				"SchedulerAlgorithm": "binpack", "ModifyIndex": 7,
				"PreemptionConfig": map[string]any{"SystemSchedulerEnabled": true},
			}})
		case http.MethodPut:
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			puts = append(puts, body)
			queries = append(queries, r.URL.RawQuery)
			_ = json.NewEncoder(w).Encode(map[string]any{"Updated": r.URL.Query().Get("cas") != "3"})
		}
	}))
	defer srv.Close()
	t.Setenv("NOMAD_ADDR", srv.URL)

	var out, errOut bytes.Buffer
	if code := run([]string{"operator", "scheduler", "get-config"}, &out, &errOut); code != 0 {
		t.Fatalf("get-config exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "binpack") || !strings.Contains(out.String(), "System Scheduler Enabled") {
		t.Fatalf("get-config output:\n%s", out.String())
	}

	if code := run([]string{"operator", "scheduler", "set-config", "-pause-eval-broker=true", "-scheduler-algorithm=spread"}, &out, &errOut); code != 0 {
		t.Fatalf("set-config exit %d: %s", code, errOut.String())
	}
	if puts[0]["PauseEvalBroker"] != true || puts[0]["SchedulerAlgorithm"] != "spread" || puts[0]["RejectJobRegistration"] != false {
		t.Fatalf("set-config sent %v", puts[0])
	}
	pre := puts[0]["PreemptionConfig"].(map[string]any)
	if pre["SystemSchedulerEnabled"] != true {
		t.Fatalf("set-config changed what was not asked: %v", pre)
	}
	if queries[0] != "" {
		t.Fatalf("no check-and-set asked, got query %q", queries[0])
	}

	if code := run([]string{"operator", "scheduler", "set-config", "-check-index=3", "-pause-eval-broker=false"}, &out, &errOut); code != 1 {
		t.Fatalf("refused check-and-set: exit %d, want 1", code)
	}
	if queries[1] != "cas=3" {
		t.Fatalf("check-and-set query %q", queries[1])
	}
	if code := run([]string{"operator", "scheduler", "set-config", "-scheduler-algorithm=fastest"}, &out, &errOut); code == 0 {
		t.Fatal("an unknown algorithm is a usage error")
	}
}
