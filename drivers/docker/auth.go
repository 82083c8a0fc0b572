package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/registry"

	"github.com/drover-project/drover/helper/dockerauth"
)

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

// lookupConfigAuth finds the credentials for host in a docker config.json.
func lookupConfigAuth(path, host string) (registry.AuthConfig, bool, error) {
	c, found, err := dockerauth.Lookup(path, host)
	if err != nil || !found {
		return registry.AuthConfig{}, false, err
	}
	return registry.AuthConfig{Username: c.Username, Password: c.Password, IdentityToken: c.IdentityToken, ServerAddress: c.ServerAddress}, true, nil
}
