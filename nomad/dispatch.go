package nomad

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/structs"
)

// JobDispatchArgs is a dispatch of a parameterized job.
type JobDispatchArgs struct {
	Namespace string
	JobID     string
	Payload   []byte
	Meta      map[string]string
	// IdempotencyToken, when set, makes a repeated dispatch with the same
	// token return the child it created while that child is not dead.
	IdempotencyToken string
	IDPrefixTemplate string
	Priority         int
	// ACL is the caller's: dispatch-job in Namespace is required (nil:
	// ACLs disabled, or an internal caller).
	ACL *acl.ACL
}

// JobDispatchReply reports a dispatch.
type JobDispatchReply struct {
	DispatchedJobID string
	EvalID          string
	EvalCreateIndex uint64
	JobCreateIndex  uint64
	Index           uint64
}

// JobDispatch creates a child of a parameterized job carrying the payload
// and meta, with an evaluation. Refusals use Nomad's wording.
func (s *Server) JobDispatch(args *JobDispatchArgs) (*JobDispatchReply, error) {
	if err := requireNamespace(args.ACL, args.Namespace, acl.NamespaceCapabilityDispatchJob); err != nil {
		return nil, err
	}
	parent, err := s.State().JobByID(nil, args.Namespace, args.JobID)
	if err != nil {
		return nil, err
	}
	switch {
	case parent == nil:
		return nil, structs.NotFoundf("job not found")
	case !parent.IsParameterized():
		return nil, structs.BadRequestf("Specified job is not a parameterized job")
	case parent.Stop:
		return nil, structs.BadRequestf("Specified job is stopped")
	}
	if err := CheckDispatch(parent.ParameterizedJob, args.Payload, args.Meta); err != nil {
		return nil, err
	}
	if args.IdempotencyToken != "" {
		if reply, err := s.existingDispatch(parent, args.IdempotencyToken); reply != nil || err != nil {
			return reply, err
		}
	}
	if args.Priority != 0 && (args.Priority < 1 || args.Priority > 100) {
		return nil, structs.BadRequestf("job priority must be between 1 and 100, got %d", args.Priority)
	}
	suffix, err := randomHex(4)
	if err != nil {
		return nil, err
	}
	now := s.now()
	id := fmt.Sprintf("%s%s%d-%s", parent.ID, structs.DispatchLaunchSuffix, now.Unix(), suffix)
	if args.IDPrefixTemplate != "" {
		id = fmt.Sprintf("%s%s%s-%d-%s", parent.ID, structs.DispatchLaunchSuffix, args.IDPrefixTemplate, now.Unix(), suffix)
	}
	child := parent.DeriveChild(id)
	child.Dispatched = true
	child.DispatchIdempotencyToken = args.IdempotencyToken
	child.Payload = append([]byte(nil), args.Payload...)
	child.Meta = maps.Clone(parent.Meta)
	if len(args.Meta) > 0 && child.Meta == nil {
		child.Meta = make(map[string]string, len(args.Meta))
	}
	maps.Copy(child.Meta, args.Meta)
	if args.Priority != 0 {
		child.Priority = args.Priority
	}
	if err := validateSubmitted(child); err != nil {
		return nil, err
	}
	if len(child.Payload) > 0 {
		// Every version of the child carries its payload, in raft and in
		// the state store: keep it small there.
		if child.Payload, err = structs.CompressPayload(child.Payload); err != nil {
			return nil, err
		}
		child.PayloadEncoding = structs.PayloadEncodingDeflate
	}
	eval := s.newEval(child, structs.EvalTriggerJobRegister)
	reply, err := s.applyJobRegister(child, nil, eval, nil)
	if err != nil {
		return nil, err
	}
	return &JobDispatchReply{DispatchedJobID: id, EvalID: reply.EvalID, EvalCreateIndex: reply.EvalCreateIndex,
		JobCreateIndex: reply.Index, Index: reply.Index}, nil
}

// existingDispatch returns the reply for a live child of parent dispatched
// with token, or nil.
func (s *Server) existingDispatch(parent *structs.Job, token string) (*JobDispatchReply, error) {
	children, err := s.State().Snapshot().ChildJobs(nil, parent.Namespace, parent.ID)
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if c.DispatchIdempotencyToken == token && c.Status != structs.JobStatusDead && !c.Stop {
			return &JobDispatchReply{DispatchedJobID: c.ID, JobCreateIndex: c.CreateIndex, Index: c.ModifyIndex}, nil
		}
	}
	return nil, nil
}

// CheckDispatch checks a dispatch's payload and meta against the
// parameterized block, with Nomad's wording.
func CheckDispatch(p *structs.ParameterizedJobConfig, payload []byte, meta map[string]string) error {
	if len(payload) > structs.DispatchPayloadSizeLimit {
		return structs.BadRequestf("Payload exceeds maximum size; %d > %d", len(payload), structs.DispatchPayloadSizeLimit)
	}
	switch p.Payload {
	case structs.DispatchPayloadRequired:
		if len(payload) == 0 {
			return structs.BadRequestf("Payload is not provided but required by parameterized job")
		}
	case structs.DispatchPayloadForbidden:
		if len(payload) != 0 {
			return structs.BadRequestf("Payload provided but forbidden by parameterized job")
		}
	}
	var unpermitted []string
	for k := range meta {
		if !slices.Contains(p.MetaRequired, k) && !slices.Contains(p.MetaOptional, k) {
			unpermitted = append(unpermitted, k)
		}
	}
	if len(unpermitted) > 0 {
		sort.Strings(unpermitted)
		return structs.BadRequestf("Dispatch provided unpermitted meta keys: %v", unpermitted)
	}
	var missing []string
	for _, k := range p.MetaRequired {
		if _, ok := meta[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return structs.BadRequestf("Dispatch did not provide required meta keys: %v", missing)
	}
	return nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
