package signals

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// signals maps upper-case names without the "SIG" prefix to signals.
var signals = map[string]syscall.Signal{
	"ABRT":   syscall.SIGABRT,
	"ALRM":   syscall.SIGALRM,
	"BUS":    syscall.SIGBUS,
	"CHLD":   syscall.SIGCHLD,
	"CONT":   syscall.SIGCONT,
	"FPE":    syscall.SIGFPE,
	"HUP":    syscall.SIGHUP,
	"ILL":    syscall.SIGILL,
	"INT":    syscall.SIGINT,
	"IO":     syscall.SIGIO,
	"IOT":    syscall.SIGIOT,
	"KILL":   syscall.SIGKILL,
	"PIPE":   syscall.SIGPIPE,
	"PROF":   syscall.SIGPROF,
	"QUIT":   syscall.SIGQUIT,
	"SEGV":   syscall.SIGSEGV,
	"STOP":   syscall.SIGSTOP,
	"SYS":    syscall.SIGSYS,
	"TERM":   syscall.SIGTERM,
	"TRAP":   syscall.SIGTRAP,
	"TSTP":   syscall.SIGTSTP,
	"TTIN":   syscall.SIGTTIN,
	"TTOU":   syscall.SIGTTOU,
	"URG":    syscall.SIGURG,
	"USR1":   syscall.SIGUSR1,
	"USR2":   syscall.SIGUSR2,
	"VTALRM": syscall.SIGVTALRM,
	"WINCH":  syscall.SIGWINCH,
	"XCPU":   syscall.SIGXCPU,
	"XFSZ":   syscall.SIGXFSZ,
}

// Parse parses a signal name such as "SIGINT", "sigint", "INT" or a
// number such as "2". The empty string is an error; callers that default to
// SIGTERM use ParseDefault.
func Parse(name string) (syscall.Signal, error) {
	s := strings.ToUpper(strings.TrimSpace(name))
	if s == "" {
		return 0, fmt.Errorf("signal name is empty")
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("signal %q is out of range 1..64", name)
		}
		return syscall.Signal(n), nil
	}
	if sig, ok := signals[strings.TrimPrefix(s, "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("unknown signal %q", name)
}

// ParseDefault is Parse with "" meaning SIGTERM.
func ParseDefault(name string) (syscall.Signal, error) {
	if strings.TrimSpace(name) == "" {
		return syscall.SIGTERM, nil
	}
	return Parse(name)
}

// Name returns the conventional name of sig, such as "SIGUSR1", or
// its number for signals without one here.
func Name(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGABRT: // same number as SIGIOT
		return "SIGABRT"
	}
	best := ""
	for name, s := range signals {
		if s == sig && (best == "" || name < best) {
			best = name
		}
	}
	if best == "" {
		return strconv.Itoa(int(sig))
	}
	return "SIG" + best
}
