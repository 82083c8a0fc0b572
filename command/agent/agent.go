package agent

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client"
	"github.com/drover-project/drover/client/allocrunner/taskrunner/getter"
	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/nomad"
	"github.com/drover-project/drover/nomad/gc"
	"github.com/drover-project/drover/nomad/imageresolve"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/version"
)

// Version is the version the agent reports.
const Version = version.Version

// Agent is a running Drover agent: a server, a client, or both (dev mode),
// behind one HTTP listener.
type Agent struct {
	config  *config.Config
	logger  hclog.Logger
	logs    hclog.InterceptLogger // logger, when it can stream to monitors (else nil)
	server  *nomad.Server         // nil on client-only agents
	client  *client.Client        // nil on server-only agents
	http    *http.Server
	httpLn  net.Listener
	serf    net.Listener // ports.serf: a second entrance to the rpc port, or nil
	metrics *agentMetrics
	tls     *agentTLS    // nil without a tls block
	polls   *parkedPolls // nil with a tls block (parked_poll.go)
	tempDir string       // removed on shutdown (dev mode)
	// stopRequests cancels the context of every HTTP request, so that
	// blocking queries (clients' long polls among them) answer at once
	// when the agent shuts down instead of holding it up.
	stopRequests context.CancelFunc
}

// NewAgent starts an agent from cfg: the HTTP listener, the server, then the
// client, which registers with the servers over HTTP.
func NewAgent(cfg *config.Config, logger hclog.Logger) (*Agent, error) {
	a := &Agent{config: cfg, logger: logger, metrics: newAgentMetrics()}
	a.logs, _ = logger.(hclog.InterceptLogger)
	if !cfg.Server.Enabled && !cfg.Client.Enabled {
		return nil, errors.New("agent: neither server nor client is enabled")
	}
	if cfg.DataDir == "" && cfg.DevMode {
		dir, err := os.MkdirTemp("", "drover-dev-")
		if err != nil {
			return nil, fmt.Errorf("agent: create dev data dir: %w", err)
		}
		cfg.DataDir, a.tempDir = dir, dir
	}
	t, err := newAgentTLS(cfg.TLS.Util(cfg.Region))
	if err != nil {
		a.cleanup()
		return nil, fmt.Errorf("agent: tls: %w", err)
	}
	a.tls = t
	ln, err := net.Listen("tcp", cfg.HTTPAddr())
	if err != nil {
		a.cleanup()
		return nil, fmt.Errorf("agent: listen on http address %s: %w", cfg.HTTPAddr(), err)
	}
	a.httpLn = ln
	err = a.start()
	if err == nil {
		err = a.startSerfListener()
	}
	if err != nil {
		_ = ln.Close()
		a.stopParts()
		a.cleanup()
		return nil, err
	}
	baseCtx, stopRequests := context.WithCancel(context.Background())
	a.stopRequests = stopRequests
	var serveLn net.Listener = ln
	if a.tls.listenerConfig() == nil {
		// Plain HTTP: clients' allocation polls can park outside net/http.
		rl := newReturningListener(ln)
		a.polls, serveLn = newParkedPolls(rl, baseCtx), rl
	}
	handler := a.handler()
	if a.client != nil {
		// The tasks' task API sockets (NOMAD_UNIX_ADDR) serve the same API.
		a.client.SetTaskAPIHandler(handler)
	}
	a.http = &http.Server{
		Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return baseCtx },
		TLSConfig:   a.tls.listenerConfig(),
		ErrorLog:    logger.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	if a.polls != nil {
		a.polls.server = a.http
	}
	go func() {
		serve := a.http.Serve
		if a.http.TLSConfig != nil {
			serve = func(ln net.Listener) error { return a.http.ServeTLS(ln, "", "") }
		}
		if err := serve(serveLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http server stopped", "error", err)
		}
	}()
	return a, nil
}

// start starts the server and the client that cfg enables.
func (a *Agent) start() error {
	cfg := a.config
	if cfg.Server.Enabled {
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
			ACLEnabled:      cfg.ACL.Enabled,
			ACLTokenMinTTL:  cfg.ACL.TokenMinExpirationTTL,
			ACLTokenMaxTTL:  cfg.ACL.TokenMaxExpirationTTL,
			MinHeartbeatTTL: cfg.Server.MinHeartbeatTTL,
			HeartbeatGrace:  cfg.Server.HeartbeatGrace,
			Registry: imageresolve.Options{
				DockerConfig: cfg.Server.RegistryAuthConfig,
				Insecure:     cfg.Server.InsecureRegistries,
			},
			RegistryBudget:  cfg.Server.RegistryRequestBudget,
			ImagePinningOff: cfg.Server.ImagePinning == config.ImagePinningOff,
			Gates:           nomad.GateConfig{PrometheusAddress: cfg.Server.PrometheusAddress, WebhookSecret: cfg.Server.GateWebhookSecret},
			RPCTLS:          a.tls.clusterTLS(),
			Metrics:         a.metrics.registry,
			Logger:          a.logger,
			GC: gc.Thresholds{
				Eval: cfg.Server.EvalGCThreshold, Job: cfg.Server.JobGCThreshold,
				Deployment: cfg.Server.DeploymentGCThreshold, Node: cfg.Server.NodeGCThreshold,
			},
			MaxHeartbeatsPerSecond: cfg.Server.MaxHeartbeatsPerSecond,
			ClientIntroduction: nomad.ClientIntroduction{
				Enforcement: cfg.Server.ClientIntroduction.Enforcement,
				DefaultTTL:  cfg.Server.ClientIntroduction.DefaultIdentityTTL,
				MaxTTL:      cfg.Server.ClientIntroduction.MaxRequestIdentityTTL,
			},
			Now: cfg.Now,
		})
		if err != nil {
			return err
		}
		a.server = srv
	}
	if cfg.Client.Enabled {
		if err := a.startClient(); err != nil {
			return err
		}
	}
	return nil
}

func (a *Agent) startClient() error {
	cfg := a.config
	servers := cfg.Client.Servers
	if len(servers) == 0 && a.server != nil {
		servers = []string{a.httpLn.Addr().String()}
	}
	httpAddr := cfg.AdvertiseHTTPAddr()
	if cfg.Ports.HTTP == 0 {
		httpAddr = a.httpLn.Addr().String()
	}
	// The template library logs through the standard logger: its lines
	// become the agent's debug lines.
	log.SetFlags(0)
	log.SetOutput(a.logger.Named("template").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}))
	plugins := map[string]map[string]any{}
	for name, p := range cfg.Plugins {
		plugins[name] = p.Config
	}
	if len(cfg.Client.ChrootEnv) > 0 {
		plugins["exec"] = withChrootEnv(plugins["exec"], cfg.Client.ChrootEnv)
	}
	c, err := client.New(&client.Config{
		NodeName: cfg.Name, Datacenter: cfg.Datacenter, Region: cfg.Region,
		NodeClass: cfg.Client.NodeClass, NodePool: cfg.Client.NodePool,
		Meta: cfg.Client.Meta, Options: cfg.Client.Options,
		DataDir: cfg.DataDir, Servers: servers, HTTPAddr: httpAddr, TLS: a.tls.clientTLS(),
		MinDynamicPort: cfg.Client.MinDynamicPort, MaxDynamicPort: cfg.Client.MaxDynamicPort,
		Plugins: plugins, HostVolumes: hostVolumes(cfg.Client.HostVolumes), HostVolumesDir: cfg.Client.HostVolumesDir,
		HostNetworks: hostNetworks(cfg.Client.HostNetworks),
		Logger:       a.logger, ACLEnabled: cfg.ACL.Enabled,
		// A dev agent's state dies with it (as `nomad agent -dev`'s does):
		// it stops its allocations on the way out instead of leaving tasks
		// that nothing could reattach or stop.
		StopAllocsOnShutdown: cfg.DevMode,
		IntroToken:           cfg.Client.IntroToken,
		// The client's template block.
		TemplateFunctionDenylist:   cfg.Client.Template.FunctionDenylist,
		TemplateDisableFileSandbox: cfg.Client.Template.DisableFileSandbox,
		Artifact:                   artifactConfig(cfg.Client.Artifact),
		Network:                    clientNetwork(cfg.Client),
		// Another node's client (ephemeral_disk migrate) is dialled as
		// the servers dial nodes.
		PeerTransport: a.tls.nodeTransport(), PeerScheme: a.tls.scheme(),
	})
	if err != nil {
		return fmt.Errorf("agent: start client: %w", err)
	}
	a.client = c
	return nil
}

// handler is the agent's HTTP API: the server's API (with /v1/client/*
// routed to the node that holds the allocation), or on a client-only agent
// its own client endpoints plus a proxy of everything else to a server.
func (a *Agent) handler() http.Handler {
	if a.server != nil {
		h := NewHTTPServer(a, a.logger)
		a.server.SetHTTPHandler(h)
		return withDebug(a.config.EnableDebug, h)
	}
	return withDebug(a.config.EnableDebug, newClientOnlyHandler(a))
}

// HTTPAddr is the address the HTTP API listens on.
func (a *Agent) HTTPAddr() string { return a.httpLn.Addr().String() }

// Server returns the agent's server, or nil.
func (a *Agent) Server() *nomad.Server { return a.server }

// Client returns the agent's client, or nil.
func (a *Agent) Client() *client.Client { return a.client }

func (a *Agent) rpcHost() string {
	if a.server == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.server.RPCAddr())
	if err != nil {
		return a.server.RPCAddr()
	}
	return host
}

// httpDrainTimeout bounds the wait for in-flight HTTP requests on shutdown.
const httpDrainTimeout = time.Second

// Shutdown ends in-flight blocking queries, stops the client (its tasks
// keep running, for the next agent on the same data dir to reattach;
// except in dev mode, where the client first stops every allocation,
// bounded by the longest kill_timeout, see client.Config.StopAllocsOnShutdown),
// stops serving HTTP once the remaining requests finish (bounded by
// httpDrainTimeout), then stops the server and, in dev mode without a
// data_dir, removes the temporary data directory.
func (a *Agent) Shutdown() error {
	a.stopRequests()
	var err error
	if a.client != nil {
		err = a.client.Shutdown()
	}
	ctx, cancel := context.WithTimeout(context.Background(), httpDrainTimeout)
	defer cancel()
	if herr := a.http.Shutdown(ctx); herr != nil {
		// Requests still running past the bound are cut off; that is not
		// a failed shutdown.
		a.logger.Warn("closing HTTP connections still busy at shutdown", "error", herr)
		_ = a.http.Close()
	}
	if !a.polls.stop(httpDrainTimeout) {
		a.logger.Warn("parked allocation polls still running at shutdown")
	}
	a.stopSerfListener()
	if a.server != nil {
		if serr := a.server.Shutdown(); serr != nil && err == nil {
			err = serr
		}
	}
	a.cleanup()
	return err
}

func (a *Agent) stopParts() error {
	var err error
	if a.client != nil {
		err = a.client.Shutdown()
	}
	if a.server != nil {
		if serr := a.server.Shutdown(); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

func (a *Agent) cleanup() {
	if a.tempDir != "" {
		_ = os.RemoveAll(a.tempDir)
	}
}

// artifactConfig is the client's artifact {} block over Nomad's defaults.
func artifactConfig(a *config.ArtifactConfig) *getter.Config {
	out := getter.DefaultConfig()
	if a == nil {
		return out
	}
	for _, d := range []struct {
		dst *time.Duration
		src *time.Duration
	}{
		{&out.HTTPReadTimeout, a.HTTPReadTimeout}, {&out.GCSTimeout, a.GCSTimeout},
		{&out.GitTimeout, a.GitTimeout}, {&out.HgTimeout, a.HgTimeout}, {&out.S3Timeout, a.S3Timeout},
	} {
		if d.src != nil {
			*d.dst = *d.src
		}
	}
	if a.HTTPMaxSize != nil {
		out.HTTPMaxSize = *a.HTTPMaxSize
	}
	if a.DecompressionSizeLimit != nil {
		out.DecompressionSizeLimit = *a.DecompressionSizeLimit
	}
	if a.DecompressionFileCountLimit != nil {
		out.DecompressionFileCountLimit = *a.DecompressionFileCountLimit
	}
	if a.DisableFilesystemIsolation != nil {
		out.DisableFilesystemIsolation = *a.DisableFilesystemIsolation
	}
	if a.SetEnvironmentVariables != nil {
		for _, name := range strings.Split(*a.SetEnvironmentVariables, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out.SetEnvironmentVariables = append(out.SetEnvironmentVariables, name)
			}
		}
	}
	return out
}

// withChrootEnv returns the exec plugin's config with client.chroot_env as
// its chroot_env, unless the plugin block sets its own (which wins). plugin
// is not modified.
func withChrootEnv(plugin map[string]any, chroot map[string]string) map[string]any {
	if _, ok := plugin["chroot_env"]; ok {
		return plugin
	}
	out := make(map[string]any, len(plugin)+1)
	for k, v := range plugin {
		out[k] = v
	}
	env := make(map[string]any, len(chroot))
	for k, v := range chroot {
		env[k] = v
	}
	out["chroot_env"] = env
	return out
}

// hostVolumes converts the client's host_volume blocks for the client.
func hostVolumes(in map[string]config.HostVolume) map[string]*structs.ClientHostVolumeConfig {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostVolumeConfig, len(in))
	for name, v := range in {
		out[name] = &structs.ClientHostVolumeConfig{Path: v.Path, ReadOnly: v.ReadOnly}
	}
	return out
}

// hostNetworks converts the client's host_network blocks for the client.
func hostNetworks(in map[string]config.HostNetwork) map[string]*structs.ClientHostNetworkConfig {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*structs.ClientHostNetworkConfig, len(in))
	for name, hn := range in {
		out[name] = &structs.ClientHostNetworkConfig{Name: name, CIDR: hn.CIDR, Interface: hn.Interface, ReservedPorts: hn.ReservedPorts}
	}
	return out
}

// clientNetwork is the client's bridge networking from its config block.
func clientNetwork(c config.ClientConfig) client.NetworkConfig {
	var paths []string
	for _, p := range strings.Split(c.CNIPath, ":") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return client.NetworkConfig{
		CNIPath: paths, CNIConfigDir: c.CNIConfigDir, BridgeName: c.BridgeNetworkName, BridgeSubnet: c.BridgeNetworkSubnet,
		HairpinMode: c.BridgeNetworkHairpinMode,
	}
}
