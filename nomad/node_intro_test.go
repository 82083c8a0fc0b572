package nomad

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/mock"
	"github.com/drover-project/drover/nomad/structs"
)

func TestDecideIntroduction(t *testing.T) {
	bad := errors.New("no token")
	cases := []struct {
		enforcement string
		first       bool
		tokenErr    error
		want        introductionVerdict
	}{
		{IntroductionStrict, true, bad, introRefuse},
		{IntroductionStrict, true, nil, introAccept},
		{IntroductionStrict, false, bad, introAccept}, // a known node re-registers with its secret
		{IntroductionWarn, true, bad, introWarn},
		{IntroductionWarn, true, nil, introAccept},
		{IntroductionWarn, false, bad, introAccept},
		{"", true, bad, introWarn}, // warn is the default
		{IntroductionNone, true, bad, introAccept},
		{IntroductionNone, true, nil, introAccept},
	}
	for _, c := range cases {
		got := decideIntroduction(c.enforcement, c.first, c.tokenErr)
		require.Equal(t, c.want, got, "enforcement %q, first %v, token error %v", c.enforcement, c.first, c.tokenErr)
	}
}

// introServer starts a single server with the given enforcement and ACLs
// on, whose clock the test moves, and waits for its signing key.
func introServer(t *testing.T, enforcement string) (*Server, *atomic.Int64) {
	t.Helper()
	offset := &atomic.Int64{}
	srv, err := NewServer(Config{
		NodeName: "intro", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1, ACLEnabled: true,
		ClientIntroduction: ClientIntroduction{Enforcement: enforcement},
		Now:                func() time.Time { return time.Now().Add(time.Duration(offset.Load())) },
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })
	require.NoError(t, srv.waitForSigningKey(30*time.Second))
	return srv, offset
}

func TestNodeRegisterStrictIntroduction(t *testing.T) {
	srv, clock := introServer(t, IntroductionStrict)
	metric := srv.introMetrics.unauthenticated.WithLabels("refused")

	node := mock.Node()
	node.Name, node.NodePool = "node-7", "default"
	forName, err := srv.CreateClientIntroductionToken(nil, "node-7", "default", 0)
	require.NoError(t, err)
	otherName, err := srv.CreateClientIntroductionToken(nil, "node-8", "default", 0)
	require.NoError(t, err)
	otherPool, err := srv.CreateClientIntroductionToken(nil, "", "edge", 0)
	require.NoError(t, err)
	wid, err := srv.SignIdentity(&structs.Allocation{ID: "a", Namespace: "default", JobID: "j", TaskGroup: "g"}, "t", nil, time.Hour)
	require.NoError(t, err)

	for _, c := range []struct{ name, token, why string }{
		{"no token", "", "no client introduction token"},
		{"garbage", "not-a-jwt", "not a signed JWT"},
		{"another node's name", otherName, `for node name "node-8"`},
		{"another pool", otherPool, `for node pool "edge"`},
		{"a workload identity", wid, "not a client introduction token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := metric.Value()
			_, _, _, err := srv.NodeRegister(node.Copy(), c.token)
			require.ErrorIs(t, err, structs.ErrForbidden)
			require.ErrorContains(t, err, "requires a valid client introduction token")
			require.ErrorContains(t, err, c.why)
			require.Equal(t, before+1, metric.Value())
			got, err := srv.State().NodeByID(nil, node.ID)
			require.NoError(t, err)
			require.Nil(t, got, "a refused node is not stored")
		})
	}

	// An expired token: the clock moves past its TTL (5m by default).
	clock.Store(int64(6 * time.Minute))
	_, _, _, err = srv.NodeRegister(node.Copy(), forName)
	require.ErrorContains(t, err, "expired")
	clock.Store(0)

	// The right token registers the node; once known, it re-registers
	// with its secret and no token, even after the token expired.
	_, _, _, err = srv.NodeRegister(node.Copy(), forName)
	require.NoError(t, err)
	got, err := srv.State().NodeByID(nil, node.ID)
	require.NoError(t, err)
	require.NotNil(t, got)
	clock.Store(int64(time.Hour))
	_, _, _, err = srv.NodeRegister(node.Copy(), "")
	require.NoError(t, err)
	// A wrong secret is still refused, token or not.
	impostor := node.Copy()
	impostor.SecretID = "wrong"
	_, _, _, err = srv.NodeRegister(impostor, forName)
	require.ErrorContains(t, err, "node secret ID does not match")

	// A token without a node name admits any node of its pool.
	clock.Store(0)
	anyName, err := srv.CreateClientIntroductionToken(nil, "", "", 0)
	require.NoError(t, err)
	other := mock.Node()
	other.Name = "node-9"
	_, _, _, err = srv.NodeRegister(other, anyName)
	require.NoError(t, err)
}

func TestNodeRegisterWarnAndNoneIntroduction(t *testing.T) {
	srv, _ := introServer(t, IntroductionWarn)
	warned := srv.introMetrics.unauthenticated.WithLabels("warned")
	node := mock.Node()
	_, _, _, err := srv.NodeRegister(node.Copy(), "")
	require.NoError(t, err, "warn accepts")
	require.Equal(t, float64(1), warned.Value(), "and counts")
	_, _, _, err = srv.NodeRegister(node.Copy(), "")
	require.NoError(t, err)
	require.Equal(t, float64(1), warned.Value(), "a known node's re-registration is not counted")

	tok, err := srv.CreateClientIntroductionToken(nil, "", "", 0)
	require.NoError(t, err)
	_, _, _, err = srv.NodeRegister(mock.Node(), tok)
	require.NoError(t, err)
	require.Equal(t, float64(1), warned.Value(), "a valid token is not counted")

	none, _ := introServer(t, IntroductionNone)
	_, _, _, err = none.NodeRegister(mock.Node(), "")
	require.NoError(t, err)
	require.Equal(t, float64(0), none.introMetrics.unauthenticated.WithLabels("warned").Value())
}

func TestClientIntroductionConfiguredTTLs(t *testing.T) {
	srv, err := NewServer(Config{
		NodeName: "intro-ttl", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0", BootstrapExpect: 1,
		ClientIntroduction: ClientIntroduction{DefaultTTL: time.Minute, MaxTTL: 2 * time.Minute},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Shutdown() })
	_, err = srv.CreateClientIntroductionToken(nil, "", "", 3*time.Minute)
	require.ErrorContains(t, err, "TTL 3m0s exceeds the maximum of 2m0s")

	_, err = NewServer(Config{NodeName: "x", DataDir: t.TempDir(), RPCAddr: "127.0.0.1:0",
		ClientIntroduction: ClientIntroduction{Enforcement: "strikt"}})
	require.ErrorContains(t, err, `client_introduction enforcement "strikt"`)
}
