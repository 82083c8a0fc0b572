// Package version holds Drover's version, shared by the agent and the CLI.
package version

// Version is Drover's release version.
const Version = "0.1.0"
