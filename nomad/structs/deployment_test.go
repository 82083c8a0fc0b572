package structs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeploymentComplete(t *testing.T) {
	group := func(desired, healthy, canaries int, promoted bool) *DeploymentState {
		return &DeploymentState{DesiredTotal: desired, HealthyAllocs: healthy, DesiredCanaries: canaries, Promoted: promoted}
	}
	cases := []struct {
		name   string
		groups map[string]*DeploymentState
		want   bool
	}{
		{"all healthy", map[string]*DeploymentState{"a": group(3, 3, 0, false), "b": group(2, 4, 0, false)}, true},
		{"one short", map[string]*DeploymentState{"a": group(3, 3, 0, false), "b": group(2, 1, 0, false)}, false},
		{"canaries not promoted", map[string]*DeploymentState{"a": group(3, 3, 3, false)}, false},
		{"canaries promoted", map[string]*DeploymentState{"a": group(3, 3, 1, true)}, true},
		{"nil state", map[string]*DeploymentState{"a": nil, "b": group(1, 1, 0, false)}, true},
		{"drained to zero", map[string]*DeploymentState{"a": group(0, 0, 0, false)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, DeploymentComplete(&Deployment{TaskGroups: tc.groups}))
		})
	}
	require.False(t, DeploymentComplete(nil))
}
