// Command drover is Drover's single binary: `drover agent` runs an agent,
// every other subcommand is the CLI (package command). It holds main only.
package main
