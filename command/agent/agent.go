package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/version"
)

// Version is the version the agent reports.
const Version = version.Version

// Agent is a running Drover agent: a server (and, with the client work, a
// client) behind one HTTP listener.
type Agent struct {
	config  *config.Config
	logger  hclog.Logger
	server  *nomad.Server
	http    *http.Server
	httpLn  net.Listener
	metrics *agentMetrics
	tempDir string // removed on shutdown (dev mode)
}

// NewAgent starts an agent from cfg: it starts the server, then serves HTTP.
func NewAgent(cfg *config.Config, logger hclog.Logger) (*Agent, error) {
	a := &Agent{config: cfg, logger: logger, metrics: newAgentMetrics()}
	if cfg.DataDir == "" && cfg.DevMode {
		dir, err := os.MkdirTemp("", "drover-dev-")
		if err != nil {
			return nil, fmt.Errorf("agent: create dev data dir: %w", err)
		}
		cfg.DataDir, a.tempDir = dir, dir
	}
	if !cfg.Server.Enabled {
		return nil, errors.New("agent: this build runs server agents (server.enabled = true); client agents come with the client work")
	}
	advertiseRPC := cfg.AdvertiseRPCAddr()
	if cfg.Ports.RPC == 0 {
		advertiseRPC = "" // an ephemeral port: advertise whatever was bound
	}
	srv, err := nomad.NewServer(nomad.Config{
		NodeName:        cfg.Name,
		Region:          cfg.Region,
		Datacenter:      cfg.Datacenter,
		DataDir:         cfg.DataDir,
		RPCAddr:         cfg.RPCAddr(),
		RPCAdvertise:    advertiseRPC,
		BootstrapExpect: cfg.Server.BootstrapExpect,
		RetryJoin:       cfg.Server.RetryJoin,
		Logger:          logger,
	})
	if err != nil {
		a.cleanup()
		return nil, err
	}
	a.server = srv
	handler := NewHTTPServer(a, logger)
	srv.SetHTTPHandler(handler)
	ln, err := net.Listen("tcp", cfg.HTTPAddr())
	if err != nil {
		_ = srv.Shutdown()
		a.cleanup()
		return nil, fmt.Errorf("agent: listen on http address %s: %w", cfg.HTTPAddr(), err)
	}
	a.httpLn = ln
	a.http = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := a.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server stopped", "error", err)
		}
	}()
	return a, nil
}

// HTTPAddr is the address the HTTP API listens on.
func (a *Agent) HTTPAddr() string { return a.httpLn.Addr().String() }

// Server returns the agent's server.
func (a *Agent) Server() *nomad.Server { return a.server }

func (a *Agent) rpcHost() string {
	host, _, err := net.SplitHostPort(a.server.RPCAddr())
	if err != nil {
		return a.server.RPCAddr()
	}
	return host
}

// Shutdown stops serving HTTP, then stops the server.
func (a *Agent) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.http.Shutdown(ctx)
	if serr := a.server.Shutdown(); serr != nil && err == nil {
		err = serr
	}
	a.cleanup()
	return err
}

func (a *Agent) cleanup() {
	if a.tempDir != "" {
		_ = os.RemoveAll(a.tempDir)
	}
}
