package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/command/agent/config"
)

// Command runs `drover agent ARGS...` and returns the process exit code.
// It blocks until SIGINT or SIGTERM, then shuts down cleanly. SIGHUP reloads
// the TLS certificate and key files.
func Command(args []string, stdout, stderr io.Writer) int {
	cfg, err := config.LoadFromArgs(args, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "==> Error loading configuration: %v\n", err)
		return 1
	}
	// An intercept logger: /v1/agent/monitor streams from it at any level.
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "agent", Level: hclog.LevelFromString(cfg.LogLevel), Output: stderr})
	for _, key := range cfg.Ignored {
		logger.Warn("agent configuration key is Nomad's but Drover does not act on it; ignored", "key", key)
	}
	fmt.Fprintf(stdout, "==> Starting Drover agent...\n")
	a, err := NewAgent(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "==> Error starting agent: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "==> Drover agent configuration:\n\n")
	if a.server != nil {
		fmt.Fprintf(stdout, "       Advertise Addrs: HTTP: %s; RPC: %s\n", a.HTTPAddr(), a.server.RPCAddr())
		fmt.Fprintf(stdout, "            Bind Addrs: HTTP: [%s]; RPC: %s\n", a.HTTPAddr(), cfg.RPCAddr())
	} else {
		fmt.Fprintf(stdout, "       Advertise Addrs: HTTP: %s\n", a.HTTPAddr())
		fmt.Fprintf(stdout, "               Servers: %v\n", cfg.Client.Servers)
	}
	if c := a.client; c != nil {
		fmt.Fprintf(stdout, "               Node ID: %s\n", c.NodeID())
	}
	fmt.Fprintf(stdout, "                Client: %t\n", cfg.Client.Enabled)
	fmt.Fprintf(stdout, "             Log Level: %s\n", cfg.LogLevel)
	fmt.Fprintf(stdout, "                Region: %s (DC: %s)\n", cfg.Region, cfg.Datacenter)
	fmt.Fprintf(stdout, "                Server: %t\n", cfg.Server.Enabled)
	fmt.Fprintf(stdout, "               Version: %s\n\n", Version)
	fmt.Fprintf(stdout, "==> Drover agent started! Log data will stream in below:\n\n")

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	sig := <-sigs
	for sig == syscall.SIGHUP {
		fmt.Fprintf(stdout, "==> Caught signal: %v\n==> Reloading TLS certificates...\n", sig)
		switch err := a.ReloadTLS(); {
		case errors.Is(err, ErrTLSDisabled):
			logger.Info("SIGHUP: TLS is not enabled, nothing to reload")
		case err != nil:
			logger.Error("SIGHUP: reloading TLS certificates failed; the previous ones stay in use", "error", err)
		default:
			logger.Info("SIGHUP: reloaded TLS certificate and key; new connections use them")
		}
		sig = <-sigs
	}
	fmt.Fprintf(stdout, "==> Caught signal: %v\n==> Gracefully shutting down agent...\n", sig)
	if err := a.Shutdown(); err != nil {
		fmt.Fprintf(stderr, "==> Error during shutdown: %v\n", err)
		return 1
	}
	return 0
}
