package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVariablesCLI: drover var against a real agent: put, get, a stale
// check index refused with exit 1, and var lock running a child under the
// lock (its exit code is the command's) and releasing it afterwards.
func TestVariablesCLI(t *testing.T) {
	srv := newServer(t, serverSpec{name: "vars", bootstrapExpect: 1})
	waitLeader(t, srv)
	addr := srv.httpAddr()

	code, out := drover(t, addr, "var", "put", "-out=none", "app/config", "greeting=hello")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `Successfully created variable "app/config"!`)
	code, out = drover(t, addr, "var", "get", "-item", "greeting", "app/config")
	require.Equal(t, 0, code, out)
	require.Equal(t, "hello", out)
	code, out = drover(t, addr, "var", "put", "-check-index=1", "app/config", "greeting=bye")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "Check-and-Set conflict")

	// The child sees the lock held (its own var get shows a lock ID).
	code, out = drover(t, addr, "var", "lock", "-ttl=10s", "-delay=10s", "-shell", "locks/job",
		"NOMAD_ADDR="+addr+" "+droverBin+" var get -out=json locks/job; exit 3")
	require.Equal(t, 3, code, out)
	require.Contains(t, out, `"Lock"`)
	require.Contains(t, out, `"TTL": "10s"`)
	code, out = drover(t, addr, "var", "get", "-out=json", "locks/job")
	require.Equal(t, 0, code, out)
	require.False(t, strings.Contains(out, `"Lock"`), "released when the child exited: %s", out)

	code, out = drover(t, addr, "var", "list", "-out=terse")
	require.Equal(t, 0, code, out)
	require.ElementsMatch(t, []string{"app/config", "locks/job"}, strings.Fields(out))
	code, out = drover(t, addr, "var", "purge", "app/config")
	require.Equal(t, 0, code, out)
}
