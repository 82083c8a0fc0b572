package structs

import (
	"errors"
	"slices"
	"time"
)

// ACL and namespace raft messages (range 110-119).
const (
	ACLPolicyUpsertRequestType    MessageType = 110
	ACLPolicyDeleteRequestType    MessageType = 111
	ACLTokenUpsertRequestType     MessageType = 112
	ACLTokenDeleteRequestType     MessageType = 113
	ACLTokenBootstrapRequestType  MessageType = 114
	ACLRoleUpsertRequestType      MessageType = 115
	ACLRoleDeleteRequestType      MessageType = 116
	NamespaceUpsertRequestType    MessageType = 117
	NamespaceDeleteRequestType    MessageType = 118
	OneTimeTokenUpsertRequestType MessageType = 119
)

// ACL token types.
const (
	ACLTokenTypeClient     = "client"
	ACLTokenTypeManagement = "management"
)

// AnonymousPolicyName is the policy that governs requests without a token.
const AnonymousPolicyName = "anonymous"

// ACLPolicy is a named policy document.
type ACLPolicy struct {
	Name        string
	Description string
	// Rules is the policy document (HCL or JSON), validated at upsert.
	Rules string
	// JobACL, when set, attaches the policy to the workload identities of
	// a job (or one group or task of it).
	JobACL      *JobACL
	CreateIndex uint64
	ModifyIndex uint64
}

// JobACL names the workloads a policy is attached to.
type JobACL struct {
	Namespace string
	JobID     string
	Group     string
	Task      string
}

// ACLToken is an API token. SecretID authenticates; AccessorID names it.
type ACLToken struct {
	AccessorID string
	SecretID   string
	Name       string
	Type       string
	Policies   []string
	Roles      []*ACLTokenRoleLink
	Global     bool
	// CreateTime and ExpirationTime are set by the leader before the
	// entry is proposed; ExpirationTime is nil for tokens that never
	// expire.
	CreateTime     time.Time
	ExpirationTime *time.Time
	ExpirationTTL  time.Duration
	CreateIndex    uint64
	ModifyIndex    uint64
}

// ACLTokenRoleLink links a token to a role by ID (the truth) and name.
type ACLTokenRoleLink struct {
	ID   string
	Name string
}

// IsExpired reports whether t has expired at now.
func (t *ACLToken) IsExpired(now time.Time) bool {
	return t != nil && t.ExpirationTime != nil && !now.Before(*t.ExpirationTime)
}

// Copy returns a deep copy of t.
func (t *ACLToken) Copy() *ACLToken {
	if t == nil {
		return nil
	}
	out := *t
	out.Policies = slices.Clone(t.Policies)
	out.Roles = nil
	for _, r := range t.Roles {
		rr := *r
		out.Roles = append(out.Roles, &rr)
	}
	if t.ExpirationTime != nil {
		e := *t.ExpirationTime
		out.ExpirationTime = &e
	}
	return &out
}

// ACLRole groups policies under a name tokens can link to.
type ACLRole struct {
	ID          string
	Name        string
	Description string
	Policies    []*ACLRolePolicyLink
	CreateIndex uint64
	ModifyIndex uint64
}

// ACLRolePolicyLink names a policy of a role.
type ACLRolePolicyLink struct {
	Name string
}

// Namespace is a named partition of jobs, allocations, evaluations and
// deployments.
type Namespace struct {
	Name        string
	Description string
	Quota       string
	Meta        map[string]string
	CreateIndex uint64
	ModifyIndex uint64
}

// OneTimeToken is a short-lived secret exchangeable once for the token
// AccessorID names.
type OneTimeToken struct {
	OneTimeSecretID string
	AccessorID      string
	ExpiresAt       time.Time
	CreateIndex     uint64
	ModifyIndex     uint64
}

// ACLPolicyUpsertRequest stores policies (replacing same-named ones).
type ACLPolicyUpsertRequest struct {
	Policies []*ACLPolicy
}

// ACLPolicyDeleteRequest deletes policies by name.
type ACLPolicyDeleteRequest struct {
	Names []string
}

// ACLTokenUpsertRequest stores tokens (replacing ones with the same
// AccessorID).
type ACLTokenUpsertRequest struct {
	Tokens []*ACLToken
}

// ACLTokenDeleteRequest deletes tokens by AccessorID.
type ACLTokenDeleteRequest struct {
	AccessorIDs []string
}

// ACLTokenBootstrapRequest stores the first management token. The FSM
// refuses it unless the stored bootstrap index equals ResetIndex (0 when
// ACLs were never bootstrapped).
type ACLTokenBootstrapRequest struct {
	Token      *ACLToken
	ResetIndex uint64
}

// ACLRoleUpsertRequest stores roles (replacing ones with the same ID).
type ACLRoleUpsertRequest struct {
	Roles []*ACLRole
}

// ACLRoleDeleteRequest deletes roles by ID.
type ACLRoleDeleteRequest struct {
	IDs []string
}

// NamespaceUpsertRequest stores namespaces.
type NamespaceUpsertRequest struct {
	Namespaces []*Namespace
}

// NamespaceDeleteRequest deletes namespaces; the FSM refuses the default
// namespace and namespaces that still hold non-terminal jobs.
type NamespaceDeleteRequest struct {
	Names []string
}

// OneTimeTokenUpsertRequest stores a one-time token, or (Delete) removes
// the one with that secret.
type OneTimeTokenUpsertRequest struct {
	Token  *OneTimeToken
	Delete string
}

// ErrForbidden marks a request the caller's token does not allow (HTTP 403).
var ErrForbidden = errors.New("forbidden")

// Authorization errors, with Nomad's wording.
var (
	ErrPermissionDenied = &RequestError{Kind: ErrForbidden, Msg: "Permission denied"}
	ErrTokenNotFound    = &RequestError{Kind: ErrForbidden, Msg: "ACL token not found"}
	ErrTokenExpired     = &RequestError{Kind: ErrForbidden, Msg: "ACL token expired"}
	ErrTokenInvalid     = &RequestError{Kind: ErrForbidden, Msg: "Invalid identity token"}
)
