//go:build !unix

package nodesim

// openFileLimit is 0 (unknown) where the limit cannot be read.
func openFileLimit() int { return 0 }
