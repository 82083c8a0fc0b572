package agent

import "io"

// Command runs `drover agent ARGS...` and returns the process exit code.
// It blocks until the agent shuts down (SIGINT/SIGTERM).
func Command(args []string, stdout, stderr io.Writer) int {
	_, _ = io.WriteString(stderr, "agent: not built yet\n")
	return 1
}
