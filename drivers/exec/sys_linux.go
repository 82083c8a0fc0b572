//go:build linux

package exec

import (
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func notify(ch chan os.Signal) {
	signal.Notify(ch, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM)
}

func lockOSThread() { runtime.LockOSThread() }
