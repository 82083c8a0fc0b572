package taskenv

import (
	"slices"
	"strings"
)

// DefaultEnvDenylist is the client's default env.denylist, Nomad's: the
// agent's variables that never reach a task even where the host
// environment does.
var DefaultEnvDenylist = []string{
	"CONSUL_TOKEN", "CONSUL_HTTP_TOKEN", "VAULT_TOKEN", "NOMAD_LICENSE",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"GOOGLE_APPLICATION_CREDENTIALS",
}

// EnvDenylistOption is the client option (client { options { ... } }) that
// replaces DefaultEnvDenylist: a comma-separated list of variable names.
const EnvDenylistOption = "env.denylist"

// EnvDenylist returns the denylist the client options ask for: the
// comma-separated names of options["env.denylist"] when the key is set (an
// empty value denies nothing), DefaultEnvDenylist otherwise.
func EnvDenylist(options map[string]string) []string {
	v, ok := options[EnvDenylistOption]
	if !ok {
		return slices.Clone(DefaultEnvDenylist)
	}
	var out []string
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// HostEnv turns environ (os.Environ's form, "KEY=value") into the
// environment a host-filesystem task inherits: every variable but those in
// deny. A later duplicate key wins, as for exec.Cmd.
func HostEnv(environ, deny []string) map[string]string {
	out := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || slices.Contains(deny, k) {
			continue
		}
		out[k] = v
	}
	return out
}
