// Package fingerprint discovers what a client node is and offers: CPU,
// memory and disk resources, the node attributes that job constraints match
// (kernel.name, os.name, cpu.arch, unique.hostname,
// unique.network.ip-address, nomad.version, driver.<name>, ...), and the
// health of each task driver.
//
// The readers are plain functions of a root directory ("/" on a real host,
// a fixture tree in tests) so that /proc/cpuinfo, /proc/meminfo,
// /proc/stat, /proc/uptime, /proc/sys/kernel/osrelease and /etc/os-release
// can be faked:
//
//	host, err := fingerprint.Host(fingerprint.HostConfig{Root: "/", DataDir: dir, Servers: servers})
//	drv := fingerprint.Drivers(ctx, catalog, now)
//	node.Attributes = fingerprint.MergeAttributes(host.Attributes, drv)
//
// The same /proc readers serve the client's host statistics endpoint
// (ReadMeminfo, ReadCPUTimes, ReadUptime).
//
// Host networks: HostNetworks resolves the client's host_network blocks to
// addresses of Interfaces; ResolveInterfaceTemplates first turns an
// interface given as a go-sockaddr template into the one name it resolves
// to (an error naming the field otherwise).
//
// Importers: the client agent (package client). It imports drivers,
// helper/sockaddrtmpl, nomad/structs, version, go-sockaddr and the
// standard library.
package fingerprint
