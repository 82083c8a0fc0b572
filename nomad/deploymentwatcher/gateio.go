package deploymentwatcher

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// The driver side of the gates (gates.go): the HTTP calls. A deployment's
// goroutine makes them and steps the answer; the machine never waits.

// GateRunner asks gates. Each call returns an answer, never an error: a
// failed call is an answer (inconclusive, fail or timeout) with the reason.
type GateRunner interface {
	QueryMetric(ctx context.Context, q QueryMetric) GateAnswered
	CallWebhook(ctx context.Context, c CallWebhook) GateAnswered
}

// GateTimeout bounds one gate call.
const GateTimeout = 10 * time.Second

// SignatureHeader carries the HMAC-SHA256 of a webhook call's body under
// the server's gate_webhook_secret: "sha256=" and the hex digest.
const SignatureHeader = "X-Drover-Signature"

// maxAnswerBytes bounds what a webhook answer's description quotes.
const maxAnswerBytes = 200

// HTTPGates asks Prometheus's HTTP API (GET /api/v1/query) and POSTs
// webhooks with net/http.
type HTTPGates struct {
	// PrometheusAddress is the server's prometheus_address
	// ("http://host:9090"); "" makes every metric gate inconclusive.
	PrometheusAddress string
	// WebhookSecret is the server's gate_webhook_secret; "" makes every
	// webhook gate inconclusive (calls are never sent unsigned).
	WebhookSecret string
	// Client is the HTTP client; nil for one with GateTimeout.
	Client *http.Client
}

func (g HTTPGates) client() *http.Client {
	if g.Client != nil {
		return g.Client
	}
	return &http.Client{Timeout: GateTimeout}
}

// promAnswer is the part of a Prometheus /api/v1/query answer gates read.
type promAnswer struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	ErrorType string `json:"errorType"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// QueryMetric runs q.Query as an instant query and judges the answer by
// q.Condition: every series of a vector (or the scalar) must meet it. An
// empty vector is no data (inconclusive), a NaN value too.
func (g HTTPGates) QueryMetric(ctx context.Context, q QueryMetric) GateAnswered {
	ans := GateAnswered{Group: q.Group, Gate: structs.GateMetric}
	if g.PrometheusAddress == "" {
		ans.Result, ans.Reason = structs.GateResultInconclusive, "the leader has no server { prometheus_address } configured"
		return ans
	}
	ctx, cancel := context.WithTimeout(ctx, GateTimeout)
	defer cancel()
	u := strings.TrimSuffix(g.PrometheusAddress, "/") + "/api/v1/query?query=" + url.QueryEscape(q.Query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		ans.Result, ans.Reason = structs.GateResultInconclusive, "bad prometheus_address: "+err.Error()
		return ans
	}
	resp, err := g.client().Do(req)
	if err != nil {
		return callFailed(ans, "query", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return callFailed(ans, "query", err)
	}
	var pa promAnswer
	if err := json.Unmarshal(body, &pa); err != nil {
		ans.Result, ans.Reason = structs.GateResultInconclusive, fmt.Sprintf("Prometheus answered %d, not JSON: %s", resp.StatusCode, quote(body))
		return ans
	}
	if pa.Status != "success" {
		ans.Result, ans.Reason = structs.GateResultInconclusive, fmt.Sprintf("query error (%s): %s", pa.ErrorType, pa.Error)
		return ans
	}
	values, labels, err := samples(pa.Data.ResultType, pa.Data.Result)
	if err != nil {
		ans.Result, ans.Reason = structs.GateResultInconclusive, err.Error()
		return ans
	}
	return judge(ans, q.Condition, values, labels)
}

// judge decides on the sampled values.
func judge(ans GateAnswered, c structs.AnalysisCondition, values []float64, labels []string) GateAnswered {
	if len(values) == 0 {
		ans.Result, ans.Reason = structs.GateResultInconclusive, "no data"
		return ans
	}
	for i, v := range values {
		if math.IsNaN(v) {
			ans.Result, ans.Reason = structs.GateResultInconclusive, "no data (NaN)"+labels[i]
			return ans
		}
	}
	for i, v := range values {
		if !c.Holds(v) {
			ans.Result = structs.GateResultFail
			ans.Reason = fmt.Sprintf("value %s%s is not %s", formatValue(v), labels[i], c)
			return ans
		}
	}
	ans.Result = structs.GateResultPass
	if len(values) == 1 {
		ans.Reason = fmt.Sprintf("value %s %s", formatValue(values[0]), c)
	} else {
		ans.Reason = fmt.Sprintf("%d series %s", len(values), c)
	}
	return ans
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// samples reads an instant vector or a scalar; labels are " {k=v, …}" per
// vector series ("" for a scalar).
func samples(typ string, raw json.RawMessage) ([]float64, []string, error) {
	switch typ {
	case "scalar":
		var pt [2]any
		if err := json.Unmarshal(raw, &pt); err != nil {
			return nil, nil, fmt.Errorf("bad scalar: %v", err)
		}
		v, err := sampleValue(pt[1])
		return []float64{v}, []string{""}, err
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(raw, &series); err != nil {
			return nil, nil, fmt.Errorf("bad vector: %v", err)
		}
		values, labels := make([]float64, 0, len(series)), make([]string, 0, len(series))
		for _, s := range series {
			v, err := sampleValue(s.Value[1])
			if err != nil {
				return nil, nil, err
			}
			values, labels = append(values, v), append(labels, labelString(s.Metric))
		}
		return values, labels, nil
	}
	return nil, nil, fmt.Errorf("query returns a %s; want an instant vector or a scalar", typ)
}

func sampleValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("bad sample value %v", v)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad sample value %q", s)
	}
	return f, nil
}

func labelString(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(m[k])
	}
	return " {" + strings.Join(parts, ", ") + "}"
}

// CallWebhook POSTs c.Body as JSON to c.URL, signed in SignatureHeader.
// 2xx passes; any other answer fails with the status and the first bytes
// of the body; no answer in time is a timeout.
func (g HTTPGates) CallWebhook(ctx context.Context, c CallWebhook) GateAnswered {
	ans := GateAnswered{Group: c.Group, Gate: structs.GateWebhook}
	if g.WebhookSecret == "" {
		ans.Result, ans.Reason = structs.GateResultInconclusive, "the leader has no server { gate_webhook_secret } configured"
		return ans
	}
	body, err := json.Marshal(c.Body)
	if err != nil {
		ans.Result, ans.Reason = structs.GateResultInconclusive, err.Error()
		return ans
	}
	ctx, cancel := context.WithTimeout(ctx, GateTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		ans.Result, ans.Reason = structs.GateResultFail, "bad URL: "+err.Error()
		return ans
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(g.WebhookSecret, body))
	resp, err := g.client().Do(req)
	if err != nil {
		return callFailed(ans, "call", err)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		ans.Result, ans.Reason = structs.GateResultPass, fmt.Sprintf("answered %d", resp.StatusCode)
		return ans
	}
	ans.Result = structs.GateResultFail
	ans.Reason = fmt.Sprintf("answered %d", resp.StatusCode)
	if t := strings.TrimSpace(string(head)); t != "" {
		ans.Reason += ": " + quote(head)
	}
	return ans
}

// Sign returns the SignatureHeader value of body under secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// callFailed is the answer to a call that got no answer: a timeout, or
// (for the metric gate inconclusive, for a webhook a failure) the error.
func callFailed(ans GateAnswered, what string, err error) GateAnswered {
	var ne interface{ Timeout() bool }
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		ans.Result, ans.Reason = structs.GateResultTimeout, fmt.Sprintf("no answer within %s", GateTimeout)
		return ans
	}
	ans.Result, ans.Reason = structs.GateResultInconclusive, what+" failed: "+err.Error()
	if ans.Gate == structs.GateWebhook {
		ans.Result = structs.GateResultFail
	}
	return ans
}

// quote returns the first maxAnswerBytes of b on one line.
func quote(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > maxAnswerBytes {
		s = s[:maxAnswerBytes] + "…"
	}
	return s
}
