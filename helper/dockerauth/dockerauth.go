// Package dockerauth reads registry credentials from a Docker config.json,
// for the two places that talk to registries: the Docker driver (pulls on a
// node) and the server's image resolver (digest pinning and the image
// watcher). It imports nothing of Drover's.
//
// Only the "auths" section is read; credential helpers (credsStore,
// credHelpers) are not run.
package dockerauth

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// DockerHubHosts are the names Docker Hub credentials are stored under.
var DockerHubHosts = []string{"index.docker.io", "docker.io", "registry-1.docker.io"}

// Credentials are one registry's entry of a config.json.
type Credentials struct {
	Username      string
	Password      string
	IdentityToken string
	// ServerAddress is the auths key the entry was found under.
	ServerAddress string
}

// configFile is the part of docker's config.json that is read.
type configFile struct {
	Auths map[string]struct {
		Auth          string `json:"auth"`
		Username      string `json:"username"`
		Password      string `json:"password"`
		IdentityToken string `json:"identitytoken"`
	} `json:"auths"`
}

// Lookup finds the credentials for registry host ("docker.io" matches every
// Docker Hub name) in the config.json at path. found is false when the file
// has no usable entry for host (one with neither a user nor an identity
// token is skipped). An unreadable file is an error wrapping the os error,
// so callers can tell a missing file (errors.Is(err, os.ErrNotExist)).
func Lookup(path, host string) (c Credentials, found bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Credentials{}, false, err
	}
	var cf configFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return Credentials{}, false, fmt.Errorf("%s: %w", path, err)
	}
	want := []string{strings.ToLower(host)}
	if host == "docker.io" {
		want = DockerHubHosts
	}
	for key, e := range cf.Auths {
		if !contains(want, strings.ToLower(KeyHost(key))) {
			continue
		}
		c := Credentials{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, ServerAddress: key}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return Credentials{}, false, fmt.Errorf("%s: auths[%q].auth: %w", path, key, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return Credentials{}, false, fmt.Errorf("%s: auths[%q].auth is not base64 of user:password", path, key)
			}
			c.Username, c.Password = user, pass
		}
		if c.Username == "" && c.IdentityToken == "" {
			continue
		}
		return c, true, nil
	}
	return Credentials{}, false, nil
}

// KeyHost reduces a config.json auths key ("https://index.docker.io/v1/",
// "registry.example.com:5000") to its host.
func KeyHost(key string) string {
	k := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	if i := strings.IndexByte(k, '/'); i >= 0 {
		k = k[:i]
	}
	return k
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
