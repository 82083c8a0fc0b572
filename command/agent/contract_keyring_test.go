package agent

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// getJWKS fetches and decodes /.well-known/jwks.json.
func getJWKS(t *testing.T, ta *testAgent) jose.JSONWebKeySet {
	t.Helper()
	resp, err := http.Get("http://" + ta.HTTPAddr() + "/.well-known/jwks.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var set jose.JSONWebKeySet
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&set))
	return set
}

func TestContractKeyring(t *testing.T) {
	ta := newTestAgent(t, "")
	kr := ta.client.Keyring()

	// The leader creates the first key by itself (published, then
	// activated: two writes).
	var keys []*api.RootKeyMeta
	require.Eventually(t, func() bool {
		var err error
		keys, _, err = kr.List(nil)
		return err == nil && len(keys) == 1 && keys[0].State == api.RootKeyStateActive // published, then activated
	}, 10*time.Second, 20*time.Millisecond)
	first := keys[0]
	require.Equal(t, api.RootKeyStateActive, first.State)
	require.Equal(t, api.EncryptionAlgorithmAES256GCM, first.Algorithm)

	set := getJWKS(t, ta)
	require.Len(t, set.Keys, 1)
	require.Equal(t, first.KeyID, set.Keys[0].KeyID)
	require.Equal(t, "RS256", set.Keys[0].Algorithm)
	require.True(t, set.Keys[0].IsPublic(), "only public halves are published")

	// The published key verifies what the stored private key signs.
	stored, err := ta.Server().State().ActiveRootKey(nil)
	require.NoError(t, err)
	priv, err := x509.ParsePKCS8PrivateKey(stored.SigningKey)
	require.NoError(t, err)
	digest := sha256.Sum256([]byte("payload"))
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv.(*rsa.PrivateKey), crypto.SHA256, digest[:])
	require.NoError(t, err)
	require.NoError(t, rsa.VerifyPKCS1v15(set.Keys[0].Key.(*rsa.PublicKey), crypto.SHA256, digest[:], sig))

	// Rotate: a new active key; the old one stays published, inactive.
	key, wm, err := kr.Rotate(nil, nil)
	require.NoError(t, err)
	require.NotZero(t, wm.LastIndex)
	require.Equal(t, api.RootKeyStateActive, key.State)
	keys, qm, err := kr.List(&api.QueryOptions{WaitIndex: first.CreateIndex})
	require.NoError(t, err)
	require.GreaterOrEqual(t, qm.LastIndex, key.CreateIndex)
	require.Len(t, keys, 2)
	states := map[string]api.RootKeyState{}
	for _, k := range keys {
		states[k.KeyID] = k.State
	}
	require.Equal(t, map[string]api.RootKeyState{first.KeyID: "inactive", key.KeyID: "active"}, states)
	require.Len(t, getJWKS(t, ta).Keys, 2)

	// The active key cannot be removed; an unknown one is 404; bad input 400.
	_, err = kr.Delete(&api.KeyringDeleteOptions{KeyID: key.KeyID}, nil)
	requireStatus(t, err, http.StatusBadRequest, "active root key cannot be deleted")
	_, err = kr.Delete(&api.KeyringDeleteOptions{KeyID: "00000000-0000-0000-0000-000000000000"}, nil)
	requireStatus(t, err, http.StatusNotFound, "root key not found")
	_, _, err = kr.Rotate(&api.KeyringRotateOptions{Algorithm: "des"}, nil)
	requireStatus(t, err, http.StatusBadRequest, "Invalid key algorithm")

	_, err = kr.Delete(&api.KeyringDeleteOptions{KeyID: first.KeyID, Force: true}, nil)
	require.NoError(t, err)
	keys, _, err = kr.List(nil)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	require.Equal(t, key.KeyID, keys[0].KeyID)
	require.Len(t, getJWKS(t, ta).Keys, 1)

	resp, err := http.Get("http://" + ta.HTTPAddr() + "/.well-known/openid-configuration")
	require.NoError(t, err)
	defer resp.Body.Close()
	var disc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&disc))
	require.Equal(t, disc["issuer"].(string)+"/.well-known/jwks.json", disc["jwks_uri"])
}
