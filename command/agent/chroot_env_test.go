package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithChrootEnv: client.chroot_env becomes the exec driver's chroot
// unless plugin "exec" sets its own, and the plugin's other options stay.
func TestWithChrootEnv(t *testing.T) {
	chroot := map[string]string{"/usr": "/usr"}
	require.Equal(t, map[string]any{"chroot_env": map[string]any{"/usr": "/usr"}}, withChrootEnv(nil, chroot))

	plugin := map[string]any{"default_pid_mode": "host"}
	got := withChrootEnv(plugin, chroot)
	require.Equal(t, map[string]any{"default_pid_mode": "host", "chroot_env": map[string]any{"/usr": "/usr"}}, got)
	require.NotContains(t, plugin, "chroot_env", "the agent's config is not modified")

	own := map[string]any{"chroot_env": map[string]any{"/bin": "/bin"}}
	require.Equal(t, own, withChrootEnv(own, chroot), "the plugin's own chroot_env wins")
}
