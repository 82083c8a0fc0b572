package rawexec

import "github.com/drover-project/drover/drivers"

// InheritsHostEnv reports that raw_exec tasks (and exec tasks, whose driver
// embeds this one) start from the client's environment less env.denylist,
// as in Nomad: they run on the host's filesystem, where PATH and HOME mean
// what they say.
func (d *Driver) InheritsHostEnv() bool { return true }

var _ drivers.HostEnvInheritor = (*Driver)(nil)
