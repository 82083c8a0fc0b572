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
		"qemu":     {"enabled": true}, // unknown here: ignored with a warning
	})
	require.Equal(t, []string{"docker", "exec", "mock", "mock_driver", "raw_exec"}, c.Names())
	for _, name := range c.Names() {
		d, err := c.Get(name)
		require.NoError(t, err)
		require.Equal(t, name, d.Name())
		if name == "docker" || name == "exec" {
			continue // healthy only where a Docker engine answers / as root; tested in their packages
		}
		fp := d.Fingerprint(context.Background())
		require.True(t, fp.Detected)
		require.True(t, fp.Healthy, name)
	}
	_, err := c.Get("qemu")
	require.ErrorIs(t, err, drivers.ErrDriverNotFound)
	for _, name := range []string{"mock", "mock_driver", "docker"} {
		_, ok := c[name].(drivers.Preparer)
		require.True(t, ok, "%s implements Preparer", name)
	}

	// raw_exec is disabled by default, as in Nomad.
	c = NewCatalog(nil, nil)
	require.False(t, c["raw_exec"].Fingerprint(context.Background()).Healthy)
	require.True(t, c["mock"].Fingerprint(context.Background()).Healthy)
}

func TestCatalogRejectsBadPluginConfig(t *testing.T) {
	plugins := map[string]map[string]any{
		"raw_exec": {"enabled": "perhaps"},
		"docker":   {"image_delay": "soon"},
		"exec":     {"default_pid_mode": "shared"},
	}
	c, err := BuildCatalog(nil, plugins)
	require.ErrorContains(t, err, `plugin "raw_exec": enabled must be a bool`)
	require.ErrorContains(t, err, `plugin "docker": image_delay must be a duration`)
	require.ErrorContains(t, err, `plugin "exec": default_pid_mode must be "private" or "host", got "shared"`)
	require.Equal(t, []string{"mock", "mock_driver"}, c.Names())
	require.Equal(t, []string{"mock", "mock_driver"}, NewCatalog(hclog.NewNullLogger(), plugins).Names())
}
