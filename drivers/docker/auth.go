package docker

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/registry"
)

// dockerHubHosts are the names Docker Hub credentials are stored under.
var dockerHubHosts = []string{"index.docker.io", "docker.io", "registry-1.docker.io"}

// registryHost returns the registry host of an image reference
// ("docker.io" for Docker Hub images).
func registryHost(image string) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", err
	}
	return reference.Domain(named), nil
}

// registryAuth returns the X-Registry-Auth value for pulling image: from the
// task's auth block when given, else from the docker config.json (plugin
// auth.config, $DOCKER_CONFIG/config.json or ~/.docker/config.json), else
// "" (anonymous).
func registryAuth(image string, task *authConfig, configPath string) (string, error) {
	host, err := registryHost(image)
	if err != nil {
		return "", err
	}
	if task != nil && (task.Username != "" || task.IdentityToken != "") {
		server := task.ServerAddress
		if server == "" {
			server = host
		}
		return registry.EncodeAuthConfig(registry.AuthConfig{
			Username: task.Username, Password: task.Password, Email: task.Email,
			ServerAddress: server, IdentityToken: task.IdentityToken,
		})
	}
	explicit := configPath != ""
	if !explicit {
		configPath = defaultDockerConfigPath()
		if configPath == "" {
			return "", nil
		}
	}
	ac, found, err := lookupConfigAuth(configPath, host)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("reading registry credentials: %w", err)
	}
	if !found {
		return "", nil
	}
	return registry.EncodeAuthConfig(ac)
}

func defaultDockerConfigPath() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		return filepath.Join(dir, "config.json")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".docker", "config.json")
}

// dockerConfigFile is the part of docker's config.json we read.
type dockerConfigFile struct {
	Auths map[string]struct {
		Auth          string `json:"auth"`
		Username      string `json:"username"`
		Password      string `json:"password"`
		IdentityToken string `json:"identitytoken"`
	} `json:"auths"`
}

// lookupConfigAuth finds the credentials for host in a docker config.json.
// Credential helpers (credsStore, credHelpers) are not run.
func lookupConfigAuth(path, host string) (registry.AuthConfig, bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return registry.AuthConfig{}, false, err
	}
	var cf dockerConfigFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return registry.AuthConfig{}, false, fmt.Errorf("%s: %w", path, err)
	}
	want := []string{host}
	if host == "docker.io" {
		want = dockerHubHosts
	}
	for key, e := range cf.Auths {
		k := configKeyHost(key)
		match := false
		for _, w := range want {
			if k == w {
				match = true
			}
		}
		if !match {
			continue
		}
		ac := registry.AuthConfig{Username: e.Username, Password: e.Password, IdentityToken: e.IdentityToken, ServerAddress: key}
		if e.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil {
				return registry.AuthConfig{}, false, fmt.Errorf("%s: auths[%q].auth: %w", path, key, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return registry.AuthConfig{}, false, fmt.Errorf("%s: auths[%q].auth is not base64 of user:password", path, key)
			}
			ac.Username, ac.Password = user, pass
		}
		if ac.Username == "" && ac.IdentityToken == "" {
			continue
		}
		return ac, true, nil
	}
	return registry.AuthConfig{}, false, nil
}

// configKeyHost reduces a config.json auths key ("https://index.docker.io/v1/",
// "registry.example.com:5000") to its host.
func configKeyHost(key string) string {
	k := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	if i := strings.IndexByte(k, '/'); i >= 0 {
		k = k[:i]
	}
	return strings.ToLower(k)
}
