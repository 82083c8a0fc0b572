package client

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drover-project/drover/wire"
)

// aclCacheTTL is how long a resolved token's rights are reused: a revoked
// token keeps working on this client's endpoints for at most this long.
const aclCacheTTL = 10 * time.Second

// aclCacheMax bounds the cache; expired entries are dropped when it fills.
const aclCacheMax = 1024

// clientRights is what a server answered about a caller's token (the body
// of the server's internal ACL resolve endpoint).
type clientRights wire.ACLResolveResponse

// allows reports whether the rights grant the namespace capability cap.
func (r *clientRights) allows(cap string) bool {
	return !r.ACLEnabled || r.Management || slices.Contains(r.Capabilities, cap)
}

type aclCacheKey struct {
	token     [sha256.Size]byte // the secret is not kept in memory as such
	namespace string
}

type aclCacheEntry struct {
	rights  *clientRights
	expires time.Time
}

// aclCache remembers resolved rights for aclCacheTTL.
type aclCache struct {
	mu sync.Mutex
	m  map[aclCacheKey]aclCacheEntry
}

func (c *aclCache) get(k aclCacheKey, now time.Time) *clientRights {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[k]; ok && now.Before(e.expires) {
		return e.rights
	}
	return nil
}

func (c *aclCache) put(k aclCacheKey, r *clientRights, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[aclCacheKey]aclCacheEntry{}
	}
	if len(c.m) >= aclCacheMax {
		for key, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, key)
			}
		}
		if len(c.m) >= aclCacheMax {
			clear(c.m)
		}
	}
	c.m[k] = aclCacheEntry{rights: r, expires: now.Add(aclCacheTTL)}
}

// requestToken is the caller's secret: X-Nomad-Token, else an
// "Authorization: Bearer" header.
func requestToken(r *http.Request) string {
	if t := r.Header.Get("X-Nomad-Token"); t != "" {
		return strings.TrimSpace(t)
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// resolveRights asks a server (with the node's secret) for the rights of
// the request's token in namespace, through the cache. A token the server
// refuses comes back as the server's 403, which the caller passes on.
func (c *Client) resolveRights(r *http.Request, namespace string) (*clientRights, error) {
	token := requestToken(r)
	key := aclCacheKey{token: sha256.Sum256([]byte(token)), namespace: namespace}
	now := c.cfg.Now()
	if rights := c.acls.get(key, now); rights != nil {
		return rights, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	var rights clientRights
	_, err := c.rpc.call(ctx, http.MethodPut, wire.NodePath(wire.RouteNodeACLResolve, c.NodeID()), nil,
		&wire.ACLResolveRequest{SecretID: token, Namespace: namespace}, &rights)
	if err != nil {
		var se *wire.StatusError
		if errors.As(err, &se) && se.Code == http.StatusForbidden {
			return nil, &httpError{Code: http.StatusForbidden, Msg: se.Msg}
		}
		return nil, err
	}
	c.acls.put(key, &rights, now)
	return &rights, nil
}

// errPermissionDenied is Nomad's answer to a request its token may not make.
var errPermissionDenied = &httpError{Code: http.StatusForbidden, Msg: "Permission denied"}

// requireNamespace checks, with ACLs on, that the request's token holds cap in
// namespace.
func (c *Client) requireNamespace(r *http.Request, namespace, cap string) error {
	if !c.cfg.ACLEnabled {
		return nil
	}
	rights, err := c.resolveRights(r, namespace)
	if err != nil {
		return err
	}
	if !rights.allows(cap) {
		return errPermissionDenied
	}
	return nil
}

// requireNodeRead checks, with ACLs on, that the request's token may read
// nodes (the host stats endpoint).
func (c *Client) requireNodeRead(r *http.Request) error {
	if !c.cfg.ACLEnabled {
		return nil
	}
	rights, err := c.resolveRights(r, "")
	if err != nil {
		return err
	}
	if rights.ACLEnabled && !rights.Management && !rights.NodeRead {
		return errPermissionDenied
	}
	return nil
}

// renewIdentities has the servers sign again the named workload
// identities of a task of this node (allocrunner.Config.RenewIdentities).
func (c *Client) renewIdentities(ctx context.Context, allocID, task string, names []string) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var out wire.IdentityRenewResponse
	_, err := c.rpc.call(ctx, http.MethodPut, wire.NodePath(wire.RouteNodeIdentities, c.NodeID()), nil,
		&wire.IdentityRenewRequest{AllocID: allocID, Task: task, Identities: names}, &out)
	if err != nil {
		return nil, err
	}
	return out.Tokens, nil
}
