//go:build !linux

package exec

import "errors"

func detectHost() hostSupport {
	return hostSupport{err: errors.New("exec driver runs only on Linux")}
}
