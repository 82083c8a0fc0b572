//go:build !linux

package rawexec

import "errors"

// enterNetns: network namespaces are Linux's.
func enterNetns(path string) error {
	if path == "" {
		return nil
	}
	return errors.New("network namespaces need Linux")
}
