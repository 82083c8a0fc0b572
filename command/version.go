package command

import "github.com/drover-project/drover/version"

// Version is the Drover release version, printed by `drover version`.
var Version = version.Version

// runVersion prints the version.
func runVersion(m *Meta, _ []string) int {
	m.outf("Drover v%s", Version)
	m.outf("Speaks the Nomad HTTP API (/v1); use it with drover or the nomad CLI via NOMAD_ADDR")
	return 0
}
