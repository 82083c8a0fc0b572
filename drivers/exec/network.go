package exec

import "github.com/drover-project/drover/drivers"

// applyGroupNetwork gives a task of an allocation with a namespace of its
// own (bridge mode) the group's host name and resolv.conf. The resolv.conf
// bind comes last, so that it lies over a chroot_env bind of /etc. The
// namespace itself is entered by the executor (TaskConfig.Network).
func applyGroupNetwork(spec *isoSpec, n *drivers.NetworkIsolation) {
	if n == nil {
		return
	}
	if n.Hostname != "" {
		spec.Hostname = n.Hostname
	}
	if n.ResolvConf != "" {
		spec.Binds = append(append([]bind(nil), spec.Binds...), bind{Src: n.ResolvConf, Dst: "/etc/resolv.conf", ReadOnly: true})
	}
}
