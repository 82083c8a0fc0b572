package structs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

// MigrateToken is what a client presents to another node's client to
// fetch the ephemeral data of allocID, which that node ran (ephemeral_disk
// migrate): an HMAC-SHA256 of the allocation ID keyed by that node's
// secret ID. The server, which knows every node's secret, hands it to the
// node of the replacement only; the serving node checks it with its own
// secret (MigrateTokenValid), so no other caller can read the data and the
// token opens nothing but that one allocation's snapshot.
func MigrateToken(allocID, nodeSecretID string) string {
	mac := hmac.New(sha256.New, []byte(nodeSecretID))
	mac.Write([]byte(allocID))
	return hex.EncodeToString(mac.Sum(nil))
}

// MigrateTokenValid reports, in constant time, whether token is
// MigrateToken(allocID, nodeSecretID). An empty secret or token is never
// valid.
func MigrateTokenValid(allocID, nodeSecretID, token string) bool {
	if nodeSecretID == "" || token == "" {
		return false
	}
	return hmac.Equal([]byte(MigrateToken(allocID, nodeSecretID)), []byte(token))
}
