package allocrunner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/drover-project/drover/client/allocrunner/taskenv"
	"github.com/drover-project/drover/client/network"
	"github.com/drover-project/drover/drivers"
	"github.com/drover-project/drover/nomad/structs"
)

// NetworkManager builds and removes allocations' own network namespaces
// (group network mode "bridge"); client/network.Manager is the real one.
type NetworkManager interface {
	Setup(ctx context.Context, alloc *structs.Allocation, spec *network.Spec, creator drivers.NetworkCreator) (*network.Status, error)
	Teardown(ctx context.Context, allocID string, creator drivers.NetworkCreator, iso *drivers.NetworkIsolation) error
}

// errNoBridge fails an allocation in bridge mode on a client without the
// means (the scheduler places such groups only on nodes that advertise
// bridge mode, so this is a node that lost it).
var errNoBridge = errors.New("network: the group asks for bridge networking, which this client cannot set up (no CNI plugins or not root)")

// networkTeardownTimeout bounds the removal of a namespace.
const networkTeardownTimeout = time.Minute

// networkHook gives an allocation in bridge mode its namespace before it
// prepares (a replacement's is built while the allocation it replaces
// still serves; reattaching to it after a client restart) and removes it
// once every task is dead, or when the runner is destroyed.
type networkHook struct {
	ar      *AllocRunner
	mgr     NetworkManager // nil: the client cannot do bridge mode
	spec    *network.Spec
	creator drivers.NetworkCreator // the group's first driver that owns namespaces, or nil

	mu       sync.Mutex
	iso      *drivers.NetworkIsolation
	torndown bool
}

// newNetworkHook returns the hook of an allocation in bridge mode, or nil
// for one in the host's network.
func newNetworkHook(ar *AllocRunner, mgr NetworkManager, catalog drivers.Catalog, tg *structs.TaskGroup, node *structs.Node) *networkHook {
	spec, ok := network.GroupSpec(ar.alloc)
	if !ok {
		return nil
	}
	if spec.Hostname != "" {
		// hostname = "web-${NOMAD_ALLOC_INDEX}": the allocation's variables.
		spec.Hostname = taskenv.Build(taskenv.Input{Alloc: ar.alloc, Node: node}).Replace(spec.Hostname)
	}
	h := &networkHook{ar: ar, mgr: mgr, spec: spec}
	for _, t := range tg.Tasks {
		if c, ok := catalog[t.Driver].(drivers.NetworkCreator); ok {
			h.creator = c
			break
		}
	}
	return h
}

func (h *networkHook) Name() string { return "network" }

func (h *networkHook) Prerun(ctx context.Context, _ *PrerunRequest) error {
	if h.mgr == nil {
		return errNoBridge
	}
	began := h.ar.now()
	st, err := h.mgr.Setup(ctx, h.ar.serverAlloc(), h.spec, h.creator)
	if err != nil {
		return err
	}
	h.ar.logger.Debug("allocation network set up", "took", h.ar.now().Sub(began))
	h.mu.Lock()
	h.iso, h.torndown = st.Isolation, false
	h.mu.Unlock()
	h.ar.setNetwork(st.Isolation, st.Network)
	h.ar.publish()
	return nil
}

// Postrun runs once every task is dead: the namespace goes.
func (h *networkHook) Postrun() error { return h.teardown() }

// Destroy removes the namespace if Postrun did not (a runner destroyed
// without running, or one whose tasks a restart left dead).
func (h *networkHook) Destroy() error { return h.teardown() }

func (h *networkHook) teardown() error {
	if h.mgr == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.torndown {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), networkTeardownTimeout)
	defer cancel()
	err := h.mgr.Teardown(ctx, h.ar.id, h.creator, h.iso)
	if err == nil {
		h.torndown = true
	}
	return err
}
