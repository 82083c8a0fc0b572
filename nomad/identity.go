package nomad

import (
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/drover-project/drover/acl"
	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// IdentityClaims are the claims of a workload identity JWT, Nomad's names.
type IdentityClaims struct {
	Namespace    string `json:"nomad_namespace"`
	JobID        string `json:"nomad_job_id"`
	AllocationID string `json:"nomad_allocation_id"`
	Task         string `json:"nomad_task"`
	jwt.Claims
}

// DefaultIdentityAudience is the audience of the default workload identity.
const DefaultIdentityAudience = "nomadproject.io"

// identityLeeway is the clock skew tolerated when checking nbf and exp.
const identityLeeway = 5 * time.Second

// SignIdentity signs the workload identity of task in alloc with the active
// root key: RS256, the key ID in the "kid" header. ttl 0 means no "exp"
// (the identity lives as long as the allocation is not terminal).
func (s *Server) SignIdentity(alloc *structs.Allocation, task string, audience []string, ttl time.Duration) (string, error) {
	sg, err := s.newIdentitySigner()
	if err != nil {
		return "", err
	}
	return sg.sign(alloc, task, &structs.WorkloadIdentity{Name: structs.WorkloadIdentityDefaultName, Audience: audience, TTL: ttl})
}

// identitySigner signs identities with one root key; building it parses
// the key once, so a plan with many allocations pays for that once.
type identitySigner struct {
	signer jose.Signer
	region string
	now    time.Time
}

// newIdentitySigner returns a signer for the active root key, at the
// server's current time.
func (s *Server) newIdentitySigner() (*identitySigner, error) {
	key, err := s.State().ActiveRootKey(nil)
	if err != nil {
		return nil, err
	}
	if key == nil {
		return nil, errors.New("identity: no active signing key")
	}
	priv, err := rsaKey(key)
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: priv},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", key.KeyID))
	if err != nil {
		return nil, fmt.Errorf("identity: signer: %w", err)
	}
	return &identitySigner{signer: signer, region: s.config.Region, now: s.now().UTC()}, nil
}

// sign signs identity wi of task in alloc. Its audience defaults to
// DefaultIdentityAudience; its subject is Nomad's
// "<region>:<namespace>:<job>:<group>:<task>:<identity name>".
func (sg *identitySigner) sign(alloc *structs.Allocation, task string, wi *structs.WorkloadIdentity) (string, error) {
	audience := wi.Audience
	if len(audience) == 0 {
		audience = []string{DefaultIdentityAudience}
	}
	name := wi.Name
	if name == "" {
		name = structs.WorkloadIdentityDefaultName
	}
	claims := IdentityClaims{
		Namespace: alloc.Namespace, JobID: alloc.JobID, AllocationID: alloc.ID, Task: task,
		Claims: jwt.Claims{
			Subject: fmt.Sprintf("%s:%s:%s:%s:%s:%s", sg.region, alloc.Namespace, alloc.JobID, alloc.TaskGroup, task, name),
			// Nomad's jti is unique per signature.
			ID:        generateUUID(),
			Audience:  jwt.Audience(audience),
			IssuedAt:  jwt.NewNumericDate(sg.now),
			NotBefore: jwt.NewNumericDate(sg.now),
		},
	}
	if wi.TTL > 0 {
		claims.Expiry = jwt.NewNumericDate(sg.now.Add(wi.TTL))
	}
	return jwt.Signed(sg.signer).Claims(claims).Serialize()
}

// signPlanIdentities gives every allocation the plan places or updates the
// signed identities that its tasks' identity blocks ask for and that it
// does not carry yet (an in-place update keeps the ones it has). It runs on
// the leader before the plan is committed through raft: signing is not
// deterministic (jti, iat), so the FSM only stores the result. Tasks
// without an identity block get nothing (unless their templates need the
// default one): signing costs an RSA operation per task, which a system
// job on thousands of nodes should not pay for tokens no task sees.
func (s *Server) signPlanIdentities(req *structs.ApplyPlanResultsRequest) error {
	var sg *identitySigner
	for _, a := range req.AllocsUpdated {
		job := req.Job
		if job == nil {
			job = a.Job
		}
		if job == nil {
			continue
		}
		tg := job.LookupTaskGroup(a.TaskGroup)
		if tg == nil {
			continue
		}
		var signed map[string]string
		for _, t := range tg.Tasks {
			for _, wi := range t.IdentitiesToSign() {
				key := structs.IdentityKey(t.Name, wi)
				if _, ok := a.SignedIdentities[key]; ok {
					continue
				}
				if sg == nil {
					var err error
					if sg, err = s.newIdentitySigner(); err != nil {
						return err
					}
				}
				tok, err := sg.sign(a, t.Name, wi)
				if err != nil {
					return fmt.Errorf("identity: sign %q of task %q in alloc %s: %w", wi.Name, t.Name, a.ID, err)
				}
				if signed == nil {
					signed = make(map[string]string, len(a.SignedIdentities)+1)
					maps.Copy(signed, a.SignedIdentities)
				}
				signed[key] = tok
			}
		}
		if signed != nil {
			a.SignedIdentities = signed
		}
	}
	return nil
}

func rsaKey(k *structs.RootKey) (*rsa.PrivateKey, error) {
	priv, err := x509.ParsePKCS8PrivateKey(k.SigningKey)
	if err != nil {
		return nil, fmt.Errorf("identity: key %s: %w", k.KeyID, err)
	}
	r, ok := priv.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("identity: key %s is not RSA", k.KeyID)
	}
	return r, nil
}

// VerifyIdentity checks a workload identity's signature against the
// keyring (by "kid") and its time claims at now, and that its allocation
// exists and is not terminal on the server.
func (s *Server) VerifyIdentity(snap *state.Snapshot, token string) (*IdentityClaims, *structs.Allocation, error) {
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil || len(parsed.Headers) != 1 {
		return nil, nil, structs.ErrTokenInvalid
	}
	keys, err := snap.RootKeys(nil)
	if err != nil {
		return nil, nil, err
	}
	var key *structs.RootKey
	for _, k := range keys {
		if k.KeyID == parsed.Headers[0].KeyID {
			key = k
		}
	}
	if key == nil {
		return nil, nil, structs.ErrTokenInvalid
	}
	priv, err := rsaKey(key)
	if err != nil {
		return nil, nil, err
	}
	var claims IdentityClaims
	if err := parsed.Claims(&priv.PublicKey, &claims); err != nil {
		return nil, nil, structs.ErrTokenInvalid
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Time: s.now()}, identityLeeway); err != nil {
		return nil, nil, structs.ErrTokenExpired
	}
	// Only identities meant for Drover itself act as tokens: a named
	// identity signed for an outside system (its own audience) cannot be
	// replayed against the API.
	if !claims.Audience.Contains(DefaultIdentityAudience) {
		return nil, nil, structs.ErrTokenInvalid
	}
	alloc, err := snap.AllocByID(nil, claims.AllocationID)
	if err != nil {
		return nil, nil, err
	}
	if alloc == nil || alloc.Terminal() || alloc.Namespace != claims.Namespace || alloc.JobID != claims.JobID {
		return nil, nil, structs.ErrTokenInvalid
	}
	return &claims, alloc, nil
}

// resolveWorkloadIdentity turns a verified workload identity into its ACL:
// Nomad's implicit workload policy (read-job in the job's namespace, and
// read and list on the workload's own variable paths) plus every policy attached to
// the job, its group or its task through job_acl.
func (s *Server) resolveWorkloadIdentity(snap *state.Snapshot, token string) (*acl.ACL, *Identity, error) {
	claims, alloc, err := s.VerifyIdentity(snap, token)
	if err != nil {
		return nil, nil, err
	}
	implicit := &acl.Policy{Namespaces: []*acl.NamespaceRule{{
		Name:         claims.Namespace,
		Capabilities: []string{acl.NamespaceCapabilityReadJob},
	}}}
	policies, err := snap.ACLPolicies(nil)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	for _, p := range policies {
		if jobACLMatches(p.JobACL, claims, alloc.TaskGroup) {
			names = append(names, p.Name)
		}
	}
	a, err := s.compilePolicies(snap, names, []*acl.Policy{implicit})
	if err != nil {
		return nil, nil, err
	}
	// The workload reads and lists its own variables (exact paths, not
	// a glob: job "web" does not read "nomad/jobs/web2").
	a = a.WithWorkload(claims.Namespace, claims.JobID, alloc.TaskGroup, claims.Task)
	return a, &Identity{Claims: claims}, nil
}

// jobACLMatches reports whether a policy's job_acl covers the workload.
func jobACLMatches(j *structs.JobACL, c *IdentityClaims, group string) bool {
	if j == nil || j.Namespace != c.Namespace {
		return false
	}
	if j.JobID == "" {
		return true // the whole namespace
	}
	if j.JobID != c.JobID {
		return false
	}
	if j.Group == "" {
		return true
	}
	if j.Group != group {
		return false
	}
	return j.Task == "" || j.Task == c.Task
}

// RenewIdentities signs again the workload identities named in names
// ("default" for the default identity) of task in allocation allocID, for
// the node that runs it: identities with a ttl are renewed by the client
// before they expire, as in Nomad. The new tokens are not stored: the
// client keeps them. An allocation of another node, a terminal one or an
// identity the task does not declare is refused.
func (s *Server) RenewIdentities(caller NodeCaller, allocID, task string, names []string) (map[string]string, error) {
	if _, err := s.authenticateNode(caller); err != nil {
		return nil, err
	}
	nodeID := caller.NodeID
	alloc, err := s.State().AllocByID(nil, allocID)
	if err != nil {
		return nil, err
	}
	if alloc == nil || alloc.NodeID != nodeID {
		return nil, structs.BadRequestf("allocation %q does not belong to node %q", allocID, nodeID)
	}
	if alloc.Terminal() || alloc.Job == nil {
		return nil, structs.BadRequestf("allocation %q is terminal", allocID)
	}
	tg := alloc.Job.LookupTaskGroup(alloc.TaskGroup)
	var t *structs.Task
	if tg != nil {
		t = tg.LookupTask(task)
	}
	if t == nil {
		return nil, structs.BadRequestf("allocation %q has no task %q", allocID, task)
	}
	byName := map[string]*structs.WorkloadIdentity{}
	for _, wi := range t.AllIdentities() {
		byName[wi.Name] = wi
	}
	sg, err := s.newIdentitySigner()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		wi := byName[n]
		if wi == nil {
			return nil, structs.BadRequestf("task %q has no identity %q", task, n)
		}
		tok, err := sg.sign(alloc, t.Name, wi)
		if err != nil {
			return nil, fmt.Errorf("identity: sign %q of task %q in alloc %s: %w", n, t.Name, alloc.ID, err)
		}
		out[structs.IdentityKey(t.Name, wi)] = tok
	}
	return out, nil
}
