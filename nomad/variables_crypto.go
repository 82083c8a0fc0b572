package nomad

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// variablesKeyInfo separates the variables' data key from any other key
// derived from the same root key.
const variablesKeyInfo = "drover variables aes256-gcm v1"

// variableCipher encrypts variable items at rest with AES-256-GCM under a
// data key derived (HKDF-SHA256) from a root key's material. The
// ciphertext is bound to its namespace and path (GCM additional data), so
// it cannot be moved to another variable. Keys are derived once per root
// key and kept.
type variableCipher struct {
	mu    sync.Mutex
	aeads map[string]cipher.AEAD // by root key ID
}

// errNoActiveKey is returned when the keyring has no active key yet (the
// leader creates one when it takes office).
var errNoActiveKey = errors.New("variables: keyring has no active root key yet")

// aead returns the cipher of root key k.
func (c *variableCipher) aead(k *structs.RootKey) (cipher.AEAD, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.aeads[k.KeyID]; ok {
		return a, nil
	}
	dk, err := hkdf.Key(sha256.New, k.SigningKey, []byte(k.KeyID), variablesKeyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("variables: derive key: %w", err)
	}
	block, err := aes.NewCipher(dk)
	if err != nil {
		return nil, fmt.Errorf("variables: cipher: %w", err)
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("variables: gcm: %w", err)
	}
	if c.aeads == nil {
		c.aeads = map[string]cipher.AEAD{}
	}
	c.aeads[k.KeyID] = a
	return a, nil
}

// additionalData binds a ciphertext to its variable.
func additionalData(ns, path string) []byte { return []byte(ns + "\x00" + path) }

// encrypt seals items for (ns, path) with the active root key and returns
// the key ID and nonce||ciphertext.
func (c *variableCipher) encrypt(snap *state.Snapshot, ns, path string, items map[string]string) (string, []byte, error) {
	key, err := snap.ActiveRootKey(nil)
	if err != nil {
		return "", nil, err
	}
	if key == nil {
		return "", nil, errNoActiveKey
	}
	a, err := c.aead(key)
	if err != nil {
		return "", nil, err
	}
	plain, err := json.Marshal(items)
	if err != nil {
		return "", nil, fmt.Errorf("variables: encode items: %w", err)
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("variables: nonce: %w", err)
	}
	return key.KeyID, a.Seal(nonce, nonce, plain, additionalData(ns, path)), nil
}

// decrypt opens v's items with the root key it names.
func (c *variableCipher) decrypt(snap *state.Snapshot, v *structs.VariableEncrypted) (map[string]string, error) {
	keys, err := snap.RootKeys(nil)
	if err != nil {
		return nil, err
	}
	var key *structs.RootKey
	for _, k := range keys {
		if k.KeyID == v.KeyID {
			key = k
		}
	}
	if key == nil {
		return nil, fmt.Errorf("variables: %s/%s: root key %s not found", v.Namespace, v.Path, v.KeyID)
	}
	a, err := c.aead(key)
	if err != nil {
		return nil, err
	}
	if len(v.Data) < a.NonceSize() {
		return nil, fmt.Errorf("variables: %s/%s: ciphertext too short", v.Namespace, v.Path)
	}
	nonce, sealed := v.Data[:a.NonceSize()], v.Data[a.NonceSize():]
	plain, err := a.Open(nil, nonce, sealed, additionalData(v.Namespace, v.Path))
	if err != nil {
		return nil, fmt.Errorf("variables: %s/%s: decrypt: %w", v.Namespace, v.Path, err)
	}
	items := map[string]string{}
	if err := json.Unmarshal(plain, &items); err != nil {
		return nil, fmt.Errorf("variables: %s/%s: decode items: %w", v.Namespace, v.Path, err)
	}
	return items, nil
}
