// Command drover is the Drover orchestrator: agent and CLI in one binary.
package main

import (
	"os"

	"github.com/drover-project/drover/command"
)

func main() {
	os.Exit(command.Run(os.Args[1:]))
}
