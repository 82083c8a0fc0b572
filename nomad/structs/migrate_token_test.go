package structs

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMigrateToken(t *testing.T) {
	tok := MigrateToken("alloc-1", "secret-of-node-a")
	require.Len(t, tok, 64)
	require.True(t, MigrateTokenValid("alloc-1", "secret-of-node-a", tok))
	require.False(t, MigrateTokenValid("alloc-2", "secret-of-node-a", tok), "one allocation only")
	require.False(t, MigrateTokenValid("alloc-1", "secret-of-node-b", tok), "another node's secret")
	require.False(t, MigrateTokenValid("alloc-1", "secret-of-node-a", ""))
	require.False(t, MigrateTokenValid("alloc-1", "", MigrateToken("alloc-1", "")))
	require.NotEqual(t, tok, MigrateToken("alloc-1", "secret-of-node-b"))
}
