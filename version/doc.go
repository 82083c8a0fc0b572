// Package version holds Drover's version, shared by the agent and the CLI.
// It imports nothing; anyone may import it.
package version
