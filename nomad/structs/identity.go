package structs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// WorkloadIdentity is a task's `identity` block: how the task receives a
// JWT the server signed for it (see nomad/identity.go). The default
// identity (Task.Identity) carries Nomad's claims and is accepted by the
// servers as an ACL token; named identities (Task.Identities) are for
// outside systems and are told apart by their audience.
type WorkloadIdentity struct {
	Name         string
	Audience     []string
	ChangeMode   string
	ChangeSignal string
	Env          bool // expose as NOMAD_TOKEN (NOMAD_TOKEN_<name> for named ones)
	File         bool // write to secrets/nomad_token (secrets/nomad_<name>.jwt)
	Filepath     string
	TTL          time.Duration // 0: the token has no "exp" claim
}

// Workload identity names, audience and change modes (Nomad's).
const (
	WorkloadIdentityDefaultName     = "default"
	WorkloadIdentityDefaultAudience = "nomadproject.io"

	IdentityChangeModeNoop    = "noop"
	IdentityChangeModeRestart = "restart"
	IdentityChangeModeSignal  = "signal"
)

// identityNameRE is the rule for identity names: they become part of an
// environment variable and a file name.
var identityNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// canonicalizeIdentities moves an unnamed (or "default") identity block
// from Identities into Identity, names it "default", and gives it Nomad's
// default audience. A task with two unnamed blocks keeps the second in
// Identities, where validation rejects it.
func (t *Task) canonicalizeIdentities() {
	kept := t.Identities[:0:0]
	for _, wi := range t.Identities {
		if wi != nil && (wi.Name == "" || wi.Name == WorkloadIdentityDefaultName) && t.Identity == nil {
			t.Identity = wi
			continue
		}
		kept = append(kept, wi)
	}
	if len(kept) == 0 {
		kept = nil
	}
	t.Identities = kept
	if t.Identity != nil {
		if t.Identity.Name == "" {
			t.Identity.Name = WorkloadIdentityDefaultName
		}
		if len(t.Identity.Audience) == 0 {
			t.Identity.Audience = []string{WorkloadIdentityDefaultAudience}
		}
	}
}

// IdentitiesToSign are the identities the server signs for the task:
// AllIdentities, and the default identity (Nomad's audience, no TTL) for a
// task without an identity block whose templates read the servers with it.
func (t *Task) IdentitiesToSign() []*WorkloadIdentity {
	all := t.AllIdentities()
	if t.Identity == nil && len(t.Templates) > 0 {
		def := &WorkloadIdentity{Name: WorkloadIdentityDefaultName, Audience: []string{WorkloadIdentityDefaultAudience}}
		all = append([]*WorkloadIdentity{def}, all...)
	}
	return all
}

// AllIdentities returns the task's default identity (when set) followed by
// its named identities.
func (t *Task) AllIdentities() []*WorkloadIdentity {
	var out []*WorkloadIdentity
	if t.Identity != nil {
		out = append(out, t.Identity)
	}
	for _, wi := range t.Identities {
		if wi != nil {
			out = append(out, wi)
		}
	}
	return out
}

// defaultIdentity is the task's identity block without a name (or named
// "default"), wherever it was given, or nil.
func (t *Task) defaultIdentity() *WorkloadIdentity {
	for _, wi := range t.AllIdentities() {
		if wi.Name == "" || wi.Name == WorkloadIdentityDefaultName {
			return wi
		}
	}
	return nil
}

// IdentityKey is the key of a signed identity in
// Allocation.SignedIdentities: the task name for the default identity,
// "<task>/<name>" for a named one.
func IdentityKey(task string, wi *WorkloadIdentity) string {
	if wi == nil || wi.Name == "" || wi.Name == WorkloadIdentityDefaultName {
		return task
	}
	return task + "/" + wi.Name
}

// EnvVar is the environment variable the identity is exposed in.
func (wi *WorkloadIdentity) EnvVar() string {
	if wi.Name == "" || wi.Name == WorkloadIdentityDefaultName {
		return "NOMAD_TOKEN"
	}
	return "NOMAD_TOKEN_" + wi.Name
}

// FilePath is where the identity is written, relative to the task dir.
func (wi *WorkloadIdentity) FilePath() string {
	switch {
	case wi.Filepath != "":
		return wi.Filepath
	case wi.Name == "" || wi.Name == WorkloadIdentityDefaultName:
		return "secrets/nomad_token"
	default:
		return "secrets/nomad_" + wi.Name + ".jwt"
	}
}

// validateIdentities checks the task's identity blocks.
func (t *Task) validateIdentities(p *problems) {
	seen := map[string]bool{}
	for i, wi := range t.AllIdentities() {
		label := fmt.Sprintf("identity %q: ", wi.Name)
		if wi.Name == "" || wi.Name == WorkloadIdentityDefaultName {
			if i > 0 {
				p.addf("identity %d: only one identity block may omit name (or use %q)", i, WorkloadIdentityDefaultName)
				continue
			}
			label = "identity: "
		} else if !identityNameRE.MatchString(wi.Name) {
			p.addf("identity %d: name %q must be 1 to 128 letters, digits, \"_\" or \"-\"", i, wi.Name)
		}
		if seen[wi.Name] {
			p.addf("%sname is used by more than one identity", label)
		}
		seen[wi.Name] = true
		for _, p2 := range wi.validate() {
			p.addf("%s%s", label, p2)
		}
	}
	// The template runners present the default identity as the servers
	// signed it at placement: a renewed token never reaches them, so one
	// that expires would stop the templates at its ttl.
	if def := t.defaultIdentity(); def != nil && def.TTL > 0 && len(t.Templates) > 0 {
		p.addf("identity: ttl cannot be set on the default identity of a task with templates (the template runners are not given renewed tokens); set ttl on a named identity instead")
	}
}

func (wi *WorkloadIdentity) validate() []string {
	var p problems
	if wi.TTL < 0 {
		p.addf("ttl must not be negative, got %s", wi.TTL)
	}
	for _, a := range wi.Audience {
		if a == "" {
			p.addf("aud must not contain an empty string")
		}
	}
	switch wi.ChangeMode {
	case "", IdentityChangeModeNoop, IdentityChangeModeRestart:
		if wi.ChangeSignal != "" {
			p.addf("change_signal is only allowed with change_mode %q", IdentityChangeModeSignal)
		}
	case IdentityChangeModeSignal:
		if wi.ChangeSignal == "" {
			p.addf("change_signal is required with change_mode %q", IdentityChangeModeSignal)
		} else if err := checkSignal(wi.ChangeSignal); err != nil {
			p.addf("change_signal: %v", err)
		}
	default:
		p.addf("change_mode must be one of noop, restart or signal, got %q", wi.ChangeMode)
	}
	if wi.Filepath != "" {
		if !wi.File {
			p.addf("filepath requires file = true")
		}
		clean := filepath.Clean(wi.Filepath)
		if filepath.IsAbs(wi.Filepath) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			p.addf("filepath must be a path inside the task directory, got %q", wi.Filepath)
		}
	}
	return p
}
