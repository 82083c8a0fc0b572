package builtin

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers"
)

func TestCatalog(t *testing.T) {
	c := NewCatalog(hclog.NewNullLogger(), map[string]map[string]any{
		"raw_exec": {"enabled": true},
		"docker":   {"volumes": true}, // unknown here: ignored with a warning
	})
	require.Equal(t, []string{"mock", "raw_exec"}, c.Names())
	for _, name := range c.Names() {
		d, err := c.Get(name)
		require.NoError(t, err)
		require.Equal(t, name, d.Name())
		fp := d.Fingerprint(context.Background())
		require.True(t, fp.Detected)
		require.True(t, fp.Healthy, name)
	}
	_, err := c.Get("qemu")
	require.ErrorIs(t, err, drivers.ErrDriverNotFound)
	_, ok := c["mock"].(drivers.Preparer)
	require.True(t, ok, "mock implements Preparer")

	// raw_exec is disabled by default, as in Nomad.
	c = NewCatalog(nil, nil)
	require.False(t, c["raw_exec"].Fingerprint(context.Background()).Healthy)
	require.True(t, c["mock"].Fingerprint(context.Background()).Healthy)
}

func TestCatalogRejectsBadPluginConfig(t *testing.T) {
	plugins := map[string]map[string]any{"raw_exec": {"enabled": "perhaps"}}
	c, err := BuildCatalog(nil, plugins)
	require.ErrorContains(t, err, `plugin "raw_exec": enabled must be a bool`)
	require.Equal(t, []string{"mock"}, c.Names())
	require.Equal(t, []string{"mock"}, NewCatalog(hclog.NewNullLogger(), plugins).Names())
}
