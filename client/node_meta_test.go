package client

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

func metaCall(t *testing.T, h http.Handler, method string, body any) (*api.NodeMetaResponse, int) {
	t.Helper()
	var buf bytes.Buffer
	if body != nil {
		require.NoError(t, json.NewEncoder(&buf).Encode(body))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/v1/client/metadata", &buf))
	if rec.Code != http.StatusOK {
		return nil, rec.Code
	}
	var out api.NodeMetaResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out))
	return &out, rec.Code
}

// TestDynamicNodeMeta: dynamic metadata sets and hides keys over the
// static ones, reaches the servers with a new registration, survives a
// client restart, and bad requests are 400s.
func TestDynamicNodeMeta(t *testing.T) {
	srv := newFakeServer(t)
	dir := t.TempDir()
	c := startClient(t, testConfig(srv, dir))
	waitRegistered(t, c)
	h := c.Handler()

	// Static: the defaults with the configured meta over them.
	static := withDefaultMeta(map[string]string{"rack": "r1"})
	got, _ := metaCall(t, h, http.MethodGet, nil)
	require.Equal(t, static, got.Meta)
	require.Equal(t, static, got.Static)
	require.Empty(t, got.Dynamic)

	foo := "bar"
	got, code := metaCall(t, h, http.MethodPost, &api.NodeMetaApplyRequest{NodeID: c.NodeID(),
		Meta: map[string]*string{"rack": nil, "drover.prefetch": nil, "foo": &foo}})
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]string{"foo": "bar", "drover.network_modes": hostNetworkModes()}, got.Meta, "a default key can be unset")
	require.Equal(t, static, got.Static)
	require.Equal(t, map[string]*string{"rack": nil, "drover.prefetch": nil, "foo": &foo}, got.Dynamic)
	require.Eventually(t, func() bool {
		n := srv.lastRegistration()
		return n != nil && n.Meta["foo"] == "bar" && n.Meta["rack"] == ""
	}, waitFor, tick)

	for _, bad := range []*api.NodeMetaApplyRequest{
		{Meta: map[string]*string{}},
		{Meta: map[string]*string{"has space": &foo}},
		{NodeID: "another-node", Meta: map[string]*string{"x": &foo}},
	} {
		_, code := metaCall(t, h, http.MethodPost, bad)
		require.Equal(t, http.StatusBadRequest, code, "%+v", bad)
	}

	require.NoError(t, c.Shutdown())
	c2 := startClient(t, testConfig(srv, dir))
	got, _ = metaCall(t, c2.Handler(), http.MethodGet, nil)
	want := map[string]string{"foo": "bar", "drover.network_modes": hostNetworkModes()}
	require.Equal(t, want, got.Meta, "dynamic metadata survives a restart")
	require.Equal(t, want, c2.Node().Meta)
}

// hostNetworkModes is drover.network_modes on this host: "host,bridge"
// where the tests run as root with the CNI plugins, else "host".
func hostNetworkModes() string { return networkModesMeta(&Config{DataDir: os.TempDir()}) }

// withDefaultMeta is DefaultMeta with m applied over it.
func withDefaultMeta(m map[string]string) map[string]string {
	out := DefaultMeta()
	out["drover.network_modes"] = hostNetworkModes()
	maps.Copy(out, m)
	return out
}

// The configured meta overrides a default key of the same name.
func TestConfiguredMetaOverridesDefaults(t *testing.T) {
	srv := newFakeServer(t)
	cfg := testConfig(srv, t.TempDir())
	cfg.Meta = map[string]string{"drover.prefetch": "false", "rack": "r2"}
	c := startClient(t, cfg)
	waitRegistered(t, c)
	got, _ := metaCall(t, c.Handler(), http.MethodGet, nil)
	require.Equal(t, map[string]string{"drover.prefetch": "false", "drover.network_modes": hostNetworkModes(), "rack": "r2"}, got.Static)
}
