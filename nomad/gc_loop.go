package nomad

import (
	"context"
	"time"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/gc"
	"github.com/drover-project/drover/nomad/structs"
)

// defaultGCInterval is how often the leader collects garbage (Nomad's
// job_gc_interval).
const defaultGCInterval = 5 * time.Minute

// gcBatch bounds the objects deleted by one raft entry.
const gcBatch = 5000

// gcThresholds returns the configured thresholds, Nomad's defaults where
// unset.
func (s *Server) gcThresholds() gc.Thresholds {
	th := gc.DefaultThresholds
	c := s.config.GC
	for _, p := range []struct{ dst, src *time.Duration }{
		{&th.Eval, &c.Eval}, {&th.Job, &c.Job}, {&th.Deployment, &c.Deployment}, {&th.Node, &c.Node},
	} {
		if *p.src > 0 {
			*p.dst = *p.src
		}
	}
	return th
}

// runGC collects garbage every GC interval on the leader until ctx ends.
func (s *Server) runGC(ctx context.Context) {
	every := s.config.GCInterval
	if every <= 0 {
		every = defaultGCInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := s.collectGarbage(s.gcThresholds()); err != nil {
			if ctx.Err() == nil {
				s.logger.Error("garbage collection failed", "error", err)
			}
		} else if n > 0 {
			s.logger.Debug("garbage collected", "objects", n)
		}
	}
}

// SystemGC collects everything collectable now, ignoring the thresholds
// (`PUT /v1/system/gc`, forwarded to the leader like every write). It
// returns how many objects it asked to delete.
func (s *Server) SystemGC(caller *acl.ACL) (int, error) {
	if err := permit(caller.IsManagement()); err != nil {
		return 0, err
	}
	return s.collectGarbage(gc.Thresholds{})
}

// collectGarbage decides on a snapshot and commits the deletions in
// batches; it returns how many objects it asked to delete.
func (s *Server) collectGarbage(th gc.Thresholds) (int, error) {
	in, err := s.gcInput()
	if err != nil {
		return 0, err
	}
	req := gc.Collect(in, s.now(), th)
	total := 0
	for _, b := range splitGC(req, gcBatch) {
		if _, _, err := s.raftApply(structs.GCRequestType, b); err != nil {
			return total, err
		}
		total += len(b.Evals) + len(b.Allocs) + len(b.Deployments) + len(b.Jobs) + len(b.Nodes)
	}
	return total, nil
}

func (s *Server) gcInput() (gc.Input, error) {
	snap := s.State().Snapshot()
	var in gc.Input
	var err error
	if in.Jobs, err = snap.Jobs(nil, "*"); err != nil {
		return in, err
	}
	if in.Evals, err = snap.Evals(nil, "*"); err != nil {
		return in, err
	}
	if in.Allocs, err = snap.Allocs(nil); err != nil {
		return in, err
	}
	if in.Deployments, err = snap.Deployments(nil, "*"); err != nil {
		return in, err
	}
	in.Nodes, err = snap.Nodes(nil)
	return in, err
}

// splitGC cuts req into requests of at most n objects each, allocations
// before their evaluations. Each request is applied on its own and the FSM
// skips what changed, so a failure between two leaves nothing unsafe; an
// allocation left without its evaluation is collected on its own later.
func splitGC(req *structs.GCRequest, n int) []*structs.GCRequest {
	var out []*structs.GCRequest
	cur := &structs.GCRequest{}
	size := 0
	flush := func() {
		if size > 0 {
			out = append(out, cur)
			cur, size = &structs.GCRequest{}, 0
		}
	}
	add := func(fn func()) {
		fn()
		size++
		if size >= n {
			flush()
		}
	}
	for _, j := range req.Jobs {
		add(func() { cur.Jobs = append(cur.Jobs, j) })
	}
	for _, id := range req.Allocs {
		add(func() { cur.Allocs = append(cur.Allocs, id) })
	}
	for _, id := range req.Evals {
		add(func() { cur.Evals = append(cur.Evals, id) })
	}
	for _, id := range req.Deployments {
		add(func() { cur.Deployments = append(cur.Deployments, id) })
	}
	for _, id := range req.Nodes {
		add(func() { cur.Nodes = append(cur.Nodes, id) })
	}
	flush()
	return out
}
