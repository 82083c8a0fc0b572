package deploymentwatcher

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

func TestHTTPGatesQueryMetric(t *testing.T) {
	var answer, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/api/v1/query", r.URL.Path)
		gotQuery = r.URL.Query().Get("query")
		if strings.Contains(answer, `"status":"error"`) {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	g := HTTPGates{PrometheusAddress: srv.URL + "/"}
	lt := structs.AnalysisCondition{Op: "<", Value: 0.01}
	vector := func(values ...string) string {
		var parts []string
		for i, v := range values {
			parts = append(parts, `{"metric":{"instance":"n`+string(rune('0'+i))+`"},"value":[1700000000.1,"`+v+`"]}`)
		}
		return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(parts, ",") + `]}}`
	}
	tests := []struct {
		name, answer, result, reason string
	}{
		{"one series passes", vector("0.001"), structs.GateResultPass, "value 0.001 < 0.01"},
		{"every series passes", vector("0", "0.002"), structs.GateResultPass, "2 series < 0.01"},
		{"one series fails", vector("0", "0.5"), structs.GateResultFail, `value 0.5 {instance="n1"} is not < 0.01`},
		{"empty vector is no data", vector(), structs.GateResultInconclusive, "no data"},
		{"NaN is no data", vector("NaN"), structs.GateResultInconclusive, `no data (NaN) {instance="n0"}`},
		{"scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0"]}}`, structs.GateResultPass, "value 0 < 0.01"},
		{"matrix refused", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, structs.GateResultInconclusive, "query returns a matrix; want an instant vector or a scalar"},
		{"query error", `{"status":"error","errorType":"bad_data","error":"parse error"}`, structs.GateResultInconclusive, "query error (bad_data): parse error"},
		{"not JSON", `<html>proxy</html>`, structs.GateResultInconclusive, "Prometheus answered 200, not JSON: <html>proxy</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer = tt.answer
			a := g.QueryMetric(context.Background(), QueryMetric{Group: "web", Query: `max(errors{job="web"})`, Condition: lt})
			require.Equal(t, GateAnswered{Group: "web", Gate: structs.GateMetric, Result: tt.result, Reason: tt.reason}, a)
			require.Equal(t, `max(errors{job="web"})`, gotQuery)
		})
	}

	a := HTTPGates{}.QueryMetric(context.Background(), QueryMetric{Group: "web", Query: "up", Condition: lt})
	require.Equal(t, structs.GateResultInconclusive, a.Result)
	require.Contains(t, a.Reason, "prometheus_address")

	srv.Close()
	a = g.QueryMetric(context.Background(), QueryMetric{Group: "web", Query: "up", Condition: lt})
	require.Equal(t, structs.GateResultInconclusive, a.Result)
	require.Contains(t, a.Reason, "query failed:")
}

func TestHTTPGatesCallWebhook(t *testing.T) {
	const secret = "s3cret"
	status, reply := http.StatusServiceUnavailable, "busy: "+strings.Repeat("x", 500)
	var got WebhookBody
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.True(t, hmac.Equal([]byte(Sign(secret, body)), []byte(r.Header.Get(SignatureHeader))), "signed with the secret")
		require.True(t, strings.HasPrefix(r.Header.Get(SignatureHeader), "sha256="))
		require.NoError(t, json.Unmarshal(body, &got))
		if r.URL.Path == "/hang" {
			<-hang
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hang) })
	g := HTTPGates{WebhookSecret: secret}
	call := CallWebhook{Group: "web", URL: srv.URL, Body: WebhookBody{Job: "web", Namespace: "default", Version: 3, DeploymentID: "d1",
		Group: "web", Checkpoint: "wave", Wave: 2, NodeIDs: []string{nodeA}, Attempt: 1, SentAt: 1700000000}}

	a := g.CallWebhook(context.Background(), call)
	require.Equal(t, structs.GateResultFail, a.Result)
	require.Equal(t, "answered 503: busy: "+strings.Repeat("x", maxAnswerBytes-len("busy: ")), a.Reason, "the status and the first bytes")
	require.Equal(t, call.Body, got)

	status, reply = http.StatusNoContent, ""
	a = g.CallWebhook(context.Background(), call)
	require.Equal(t, GateAnswered{Group: "web", Gate: structs.GateWebhook, Result: structs.GateResultPass, Reason: "answered 204"}, a)

	a = HTTPGates{}.CallWebhook(context.Background(), call)
	require.Equal(t, structs.GateResultInconclusive, a.Result, "never sent unsigned")
	require.Contains(t, a.Reason, "gate_webhook_secret")

	slow := HTTPGates{WebhookSecret: secret, Client: &http.Client{Timeout: 200 * time.Millisecond}}
	hung := call
	hung.URL = srv.URL + "/hang"
	a = slow.CallWebhook(context.Background(), hung)
	require.Equal(t, structs.GateResultTimeout, a.Result)
}

func TestSignIsHMACSHA256(t *testing.T) {
	// RFC 4231 test case 2.
	require.Equal(t, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
		Sign("Jefe", []byte("what do ya want for nothing?")))
}
