package client

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/drover-project/drover/client/fingerprint"
	"github.com/drover-project/drover/helper/apiconv"
	"github.com/drover-project/drover/nomad/structs"
)

// heartbeatDelay is the wait before the next heartbeat: half the TTL less
// up to a fifth of that (jitter in [0,1)), so that a node's heartbeats
// spread out and one late heartbeat still lands within the TTL.
func heartbeatDelay(ttl time.Duration, jitter float64) time.Duration {
	half := ttl / 2
	return half - time.Duration(float64(half)*0.2*jitter)
}

// nodeLoop registers the node, then heartbeats it until ctx ends:
//
//	unregistered --register ok--> registered --heartbeat ok--> registered
//	     ^   |                        |   |
//	     |   +--error: backoff--+     |   +--network error: rotate, retry soon
//	     +--------404 or re-register wanted (fingerprint changed)--+
func (c *Client) nodeLoop(ctx context.Context) {
	registered := false
	failures := 0
	ttl := c.cfg.timing.defaultTTL
	for ctx.Err() == nil {
		var err error
		if registered {
			ttl, err = c.heartbeatOnce(ctx, ttl)
			if isStatus(err, http.StatusNotFound) {
				c.logger.Warn("server does not know this node; registering again", "error", err)
				registered, failures = false, 0
				continue
			}
		} else {
			ttl, err = c.registerOnce(ctx, ttl)
			registered = err == nil
		}
		var wait time.Duration
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait = min(backoff(c.cfg.timing.retry, c.cfg.timing.maxRetry, failures), heartbeatDelay(ttl, 0))
			c.logger.Warn("node update failed; retrying", "registered", registered, "error", err, "retry_in", wait)
		} else {
			failures = 0
			wait = heartbeatDelay(ttl, rand.Float64())
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.reregister:
			registered = false
		case <-t.C:
		}
		t.Stop()
	}
}

// registerOnce sends the node; it returns the server's TTL (or ttl when it
// sent none).
func (c *Client) registerOnce(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	node := c.Node()
	resp, err := c.rpc.register(ctx, apiconv.NodeToAPI(node), node.NodeResources.NodeNetworks, c.secretID, c.cfg.IntroToken)
	if err != nil {
		return ttl, err
	}
	c.noteContact(c.cfg.Now())
	c.registrations.Add(1)
	c.logger.Info("node registered", "node_id", node.ID, "index", resp.Index, "heartbeat_ttl", resp.HeartbeatTTL)
	c.registeredOnce.Do(func() { close(c.registered) })
	c.services.resync() // a node registered again may have lost its services
	return c.ttlOr(resp.HeartbeatTTL), nil
}

func (c *Client) heartbeatOnce(ctx context.Context, ttl time.Duration) (time.Duration, error) {
	resp, err := c.rpc.heartbeat(ctx, c.NodeID(), structs.NodeStatusReady)
	if err != nil {
		return ttl, err
	}
	c.noteContact(c.cfg.Now())
	c.logger.Trace("heartbeat", "ttl", resp.HeartbeatTTL)
	return c.ttlOr(resp.HeartbeatTTL), nil
}

func (c *Client) ttlOr(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		return c.cfg.timing.defaultTTL
	}
	return ttl
}

// requestRegister asks nodeLoop to register the node again.
func (c *Client) requestRegister() {
	select {
	case c.reregister <- struct{}{}:
	default:
	}
}

// driverLoop fingerprints the drivers every driverInterval and registers
// the node again when their health or attributes changed.
func (c *Client) driverLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.timing.driverInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.refreshDrivers(ctx) {
			c.requestRegister()
		}
	}
}

// refreshDrivers fingerprints the drivers and updates the node; it reports
// whether anything but the update times changed.
func (c *Client) refreshDrivers(ctx context.Context) bool {
	drv := fingerprint.Drivers(ctx, c.drivers, c.cfg.Now())
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	if !fingerprint.DriversChanged(c.node.Drivers, drv) {
		return false
	}
	n := c.node.Copy()
	n.Drivers = drv
	n.Attributes = fingerprint.MergeAttributes(c.hostAttrs, drv)
	c.node = n
	c.logger.Info("driver fingerprint changed; registering again")
	return true
}
