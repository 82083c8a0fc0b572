package drivers

import (
	"syscall"

	"github.com/drover-project/drover/signals"
)

// ParseSignal parses a signal name such as "SIGINT", "sigint", "INT" or a
// number such as "2" (signals.Parse: the names registration accepts). The
// empty string is an error; callers that default to SIGTERM use
// ParseSignalDefault.
func ParseSignal(name string) (syscall.Signal, error) { return signals.Parse(name) }

// ParseSignalDefault is ParseSignal with "" meaning SIGTERM.
func ParseSignalDefault(name string) (syscall.Signal, error) { return signals.ParseDefault(name) }

// SignalName returns the conventional name of sig, such as "SIGUSR1", or
// its number for signals without one here.
func SignalName(sig syscall.Signal) string { return signals.Name(sig) }
