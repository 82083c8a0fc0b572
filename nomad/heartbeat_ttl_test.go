package nomad

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHeartbeatTTLScales: the TTL is the minimum until the fleet would
// send more than perSecond heartbeats a second, then nodes/perSecond; the
// jitter adds up to the same again.
func TestHeartbeatTTLScales(t *testing.T) {
	cases := []struct {
		nodes  int
		rate   float64
		jitter float64
		want   time.Duration
	}{
		{nodes: 10, rate: 50, want: 10 * time.Second},
		{nodes: 500, rate: 50, want: 10 * time.Second},
		{nodes: 1000, rate: 50, want: 20 * time.Second},
		{nodes: 10000, rate: 50, want: 200 * time.Second},
		{nodes: 10000, rate: 100, want: 100 * time.Second},
		{nodes: 10000, rate: 50, jitter: 0.5, want: 300 * time.Second},
		{nodes: 0, rate: 50, jitter: 0.999, want: 10*time.Second + time.Duration(0.999*float64(10*time.Second))},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, heartbeatTTL(10*time.Second, tc.rate, tc.nodes, tc.jitter), "%+v", tc)
	}
}
