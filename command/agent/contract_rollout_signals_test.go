package agent

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestContractRolloutSignalMeta: drover.auto_pause_on / drover.auto_fail_on
// are accepted when they parse and refused with a 400 naming the key and
// the bad condition when they do not.
func TestContractRolloutSignalMeta(t *testing.T) {
	ta := newTestAgent(t, "")
	c := ta.client

	good := testJob("signals")
	good.TaskGroups[0].Meta = map[string]string{"drover.auto_pause_on": "restarts>2,oom>0", "drover.auto_fail_on": "pull_failures>=1"}
	_, _, err := c.Jobs().Register(good, nil)
	require.NoError(t, err)

	for meta, want := range map[string]string{
		"restarts>2,crashes>0": `meta "drover.auto_fail_on": condition "crashes>0": unknown signal "crashes"`,
		"restarts=2":           `meta "drover.auto_fail_on": condition "restarts=2": operator "=" not supported`,
		"restarts>lots":        `meta "drover.auto_fail_on": condition "restarts>lots": threshold "lots" is not a non-negative integer`,
	} {
		bad := testJob("signals-bad")
		bad.TaskGroups[0].Meta = map[string]string{"drover.auto_fail_on": meta}
		_, _, err := c.Jobs().Register(bad, nil)
		requireStatus(t, err, http.StatusBadRequest, want)
	}
}
