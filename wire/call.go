package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// How a call of the internal protocol travels, for its two callers (the
// client agent and the node simulator): a JSON body, the node's secret in
// X-Nomad-Token, a JSON answer or a StatusError.

// StatusError is a server's non-2xx answer to an internal call.
type StatusError struct {
	Code int
	Msg  string // the response body (its first 4 KiB), trimmed
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("server answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Msg)
}

// NewRequest builds an internal call of method to url: body, when non-nil,
// encoded as JSON; secret (the node's secret ID) in X-Nomad-Token.
func NewRequest(ctx context.Context, method, url, secret string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the body: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Nomad-Token", secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// ReadAnswer reads the answer to an internal call: a 2xx answer is decoded
// into out (when non-nil; otherwise read to its end, so that the
// connection is reused), any other is a *StatusError. The caller closes
// resp.Body.
func ReadAnswer(resp *http.Response, out any) error {
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return &StatusError{Code: resp.StatusCode, Msg: strings.TrimSpace(string(msg))}
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding answer: %w", err)
	}
	return nil
}
