package main

import (
	"os"

	"github.com/drover-project/drover/command"
	"github.com/drover-project/drover/drivers/rawexec"
)

func main() {
	// A raw_exec task's executor is this binary re-run with a hidden
	// argument; it never returns.
	rawexec.MaybeRunExecutor()
	os.Exit(command.Run(os.Args[1:]))
}
