// Package builtin links Drover's built-in task drivers (docker, exec,
// raw_exec and mock) so that drivers.NewCatalog finds them, and offers NewCatalog as a
// shorthand that makes the dependency explicit.
//
// Importers: the client agent (building its catalog) and tests; the node
// simulator imports drivers/mock alone. The agent's main must still call
// rawexec.MaybeRunExecutor first.
package builtin

import (
	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/drivers"
	_ "github.com/drover-project/drover/drivers/docker"  // registers "docker"
	_ "github.com/drover-project/drover/drivers/exec"    // registers "exec"
	_ "github.com/drover-project/drover/drivers/mock"    // registers "mock"
	_ "github.com/drover-project/drover/drivers/rawexec" // registers "raw_exec"
)

// NewCatalog is drivers.NewCatalog with the built-in drivers linked.
func NewCatalog(logger hclog.Logger, plugins map[string]map[string]any) drivers.Catalog {
	return drivers.NewCatalog(logger, plugins)
}

// BuildCatalog is drivers.BuildCatalog with the built-in drivers linked.
func BuildCatalog(logger hclog.Logger, plugins map[string]map[string]any) (drivers.Catalog, error) {
	return drivers.BuildCatalog(logger, plugins)
}
