package agent

import (
	"fmt"
	"net"
	"strconv"
)

// startSerfListener listens on ports.serf, when it is set, as a second
// entrance to the server's rpc port, so that other servers (and `agent
// join`) may name this server by the address Nomad would gossip on.
func (a *Agent) startSerfListener() error {
	if a.server == nil || a.config.Ports.Serf == 0 {
		return nil
	}
	addr := net.JoinHostPort(a.config.BindAddr, strconv.Itoa(a.config.Ports.Serf))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("agent: listen on serf address %s: %w", addr, err)
	}
	a.serf = ln
	go a.server.ServeAlso(ln)
	return nil
}

// stopSerfListener closes the listener of startSerfListener, if any.
func (a *Agent) stopSerfListener() {
	if a.serf != nil {
		_ = a.serf.Close()
	}
}
