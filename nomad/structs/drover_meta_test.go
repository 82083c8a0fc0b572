package structs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidateDroverMeta: an unknown drover.* group meta key is refused
// naming it; a registered one is checked by its own check, whose problems
// name the key; other meta is not Drover's business.
func TestValidateDroverMeta(t *testing.T) {
	const key = "drover.test_only_key"
	droverMetaKeys[key] = droverMetaKey{check: func(v string, _ *TaskGroup, jobType string) []string {
		if v != "ok" {
			return []string{"must be ok for " + jobType + " jobs, got " + v}
		}
		return nil
	}}
	t.Cleanup(func() { delete(droverMetaKeys, key) })

	for _, c := range []struct {
		meta map[string]string
		want []string
	}{
		{meta: map[string]string{"team": "a", "drover_like": "x"}},
		{meta: map[string]string{key: "ok"}},
		{meta: map[string]string{key: "no"}, want: []string{`meta "drover.test_only_key": must be ok for system jobs, got no`}},
		{meta: map[string]string{"drover.canary_cuont": "1"}, want: []string{`meta "drover.canary_cuont": unknown Drover key (known: `}},
	} {
		var p problems
		(&TaskGroup{Meta: c.meta}).validateDroverMeta(&p, JobTypeSystem)
		require.Len(t, p, len(c.want), "%v: %v", c.meta, p)
		for i, w := range c.want {
			require.True(t, strings.HasPrefix(p[i], w), "%q does not start with %q", p[i], w)
		}
	}
	require.Panics(t, func() { RegisterDroverMetaKey("canary_count", nil) }, "the prefix is required")
	require.Panics(t, func() { RegisterDroverMetaKey(key, nil) }, "a key is registered once")
}
