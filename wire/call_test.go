package wire

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCall_RequestAndAnswer(t *testing.T) {
	var seen struct {
		sync.Mutex
		token, contentType string
		body               NodeHeartbeatRequest
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Lock()
		defer seen.Unlock()
		seen.token, seen.contentType = r.Header.Get("X-Nomad-Token"), r.Header.Get("Content-Type")
		switch r.URL.Path {
		case "/ok", "/ok-without-answer":
			if r.ContentLength == 0 {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if err := json.NewDecoder(r.Body).Decode(&seen.body); err != nil {
				t.Errorf("decoding the request: %v", err)
			}
			_ = json.NewEncoder(w).Encode(&NodeHeartbeatResponse{HeartbeatTTL: 5, Index: 7})
		case "/bad":
			_, _ = w.Write([]byte("not json"))
		default:
			http.Error(w, "  node not found \n", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	do := func(path string, body, out any) error {
		req, err := NewRequest(t.Context(), http.MethodPut, srv.URL+path, "secret", body)
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		return ReadAnswer(resp, out)
	}

	var out NodeHeartbeatResponse
	require.NoError(t, do("/ok", &NodeHeartbeatRequest{Status: "ready"}, &out))
	require.Equal(t, NodeHeartbeatResponse{HeartbeatTTL: 5, Index: 7}, out)
	seen.Lock()
	require.Equal(t, "secret", seen.token)
	require.Equal(t, "application/json", seen.contentType)
	require.Equal(t, "ready", seen.body.Status)

	seen.Unlock()
	require.NoError(t, do("/ok-without-answer", nil, nil), "a 2xx status without out is fine")
	seen.Lock()
	require.Empty(t, seen.contentType, "no body, no content type")
	seen.Unlock()

	err := do("/missing", nil, &out)
	var se *StatusError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, &StatusError{Code: http.StatusNotFound, Msg: "node not found"}, se)
	require.EqualError(t, err, "server answered 404 Not Found: node not found")

	require.ErrorContains(t, do("/bad", nil, &out), "decoding answer")
	_, err = NewRequest(t.Context(), http.MethodPut, srv.URL, "s", func() {})
	require.ErrorContains(t, err, "encoding the body")
}
