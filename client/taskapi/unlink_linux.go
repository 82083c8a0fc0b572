package taskapi

import "golang.org/x/sys/unix"

func unlinkat(dirfd int, name string) error { return unix.Unlinkat(dirfd, name, 0) }
