//go:build linux

package exec

import (
	"errors"
	"fmt"
	"os"
)

// detectHost checks that exec tasks can run here (root, namespaces) and
// whether they get a cgroup v2.
func detectHost() hostSupport {
	if os.Geteuid() != 0 {
		return hostSupport{err: errors.New("exec driver must run as root")}
	}
	for _, ns := range []string{"mnt", "pid", "ipc", "uts"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return hostSupport{err: fmt.Errorf("exec driver needs %s namespaces: %w", ns, err)}
		}
	}
	if err := probeNamespaces(); err != nil {
		return hostSupport{err: fmt.Errorf("exec driver cannot create namespaces: %w", err)}
	}
	return hostSupport{cgroupErr: cgroupV2Usable()}
}
