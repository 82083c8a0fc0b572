package nomad

import "github.com/drover-project/drover/nomad/structs"

// UpsertNodePool validates pool and creates or updates it through raft.
// Bad input is a *structs.RequestError.
func (s *Server) UpsertNodePool(pool *structs.NodePool) (uint64, error) {
	if pool == nil {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "missing node pool"}
	}
	if pool.Name == "" {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "missing node pool name"}
	}
	if err := pool.Validate(); err != nil {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: err.Error()}
	}
	return s.applyChecked(structs.NodePoolUpsertRequestType, &structs.NodePoolUpsertRequest{NodePools: []*structs.NodePool{pool}})
}

// DeleteNodePool deletes the pool name: a missing one is not found, a
// built-in one or one with nodes or jobs left is refused.
func (s *Server) DeleteNodePool(name string) (uint64, error) {
	if name == "" {
		return 0, &structs.RequestError{Kind: structs.ErrBadRequest, Msg: "missing node pool name"}
	}
	p, err := s.State().NodePoolByName(nil, name)
	if err != nil {
		return 0, err
	}
	if p == nil {
		return 0, structs.NotFoundf("node pool %q not found", name)
	}
	return s.applyChecked(structs.NodePoolDeleteRequestType, &structs.NodePoolDeleteRequest{Names: []string{name}})
}

// applyChecked applies msg through raft and returns the FSM's error, if
// any, as the error.
func (s *Server) applyChecked(t structs.MessageType, msg any) (uint64, error) {
	resp, index, err := s.raftApply(t, msg)
	if err != nil {
		return 0, err
	}
	if rerr, ok := resp.(error); ok {
		return 0, rerr
	}
	return index, nil
}
