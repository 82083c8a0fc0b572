package dockerauth

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLookup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	b64 := base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	require.NoError(t, os.WriteFile(path, []byte(`{"auths": {
		"https://index.docker.io/v1/": {"auth": "`+b64+`"},
		"Registry.Example.com:5000": {"username": "bob", "password": "pw"},
		"tokens.example.com": {"identitytoken": "tok"},
		"empty.example.com": {},
		"bad.example.com": {"auth": "not base64!"}
	}}`), 0o600))

	cases := []struct {
		host  string
		want  Credentials
		found bool
		err   bool
	}{
		{"docker.io", Credentials{Username: "alice", Password: "s3cret", ServerAddress: "https://index.docker.io/v1/"}, true, false},
		{"registry.example.com:5000", Credentials{Username: "bob", Password: "pw", ServerAddress: "Registry.Example.com:5000"}, true, false},
		{"tokens.example.com", Credentials{IdentityToken: "tok", ServerAddress: "tokens.example.com"}, true, false},
		{"empty.example.com", Credentials{}, false, false},
		{"other.example.com", Credentials{}, false, false},
		{"bad.example.com", Credentials{}, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.host, func(t *testing.T) {
			got, found, err := Lookup(path, tc.host)
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.found, found)
			require.Equal(t, tc.want, got)
		})
	}

	_, _, err := Lookup(filepath.Join(t.TempDir(), "missing.json"), "docker.io")
	require.True(t, errors.Is(err, os.ErrNotExist), "a missing file is told apart: %v", err)
}

func TestKeyHost(t *testing.T) {
	require.Equal(t, "index.docker.io", KeyHost("https://index.docker.io/v1/"))
	require.Equal(t, "r.example.com:5000", KeyHost("http://r.example.com:5000"))
	require.Equal(t, "r.example.com", KeyHost("r.example.com"))
}
