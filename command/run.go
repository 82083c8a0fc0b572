package command

import (
	"os"

	"github.com/drover-project/drover/command/agent"
)

// Run dispatches the CLI and returns the exit code.
func Run(args []string) int {
	if len(args) > 0 && args[0] == "agent" {
		return agent.Command(args[1:], os.Stdout, os.Stderr)
	}
	return 1
}
