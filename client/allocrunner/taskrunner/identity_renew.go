package taskrunner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/drover-project/drover/nomad/structs"
)

// RenewFunc asks the servers for new signatures of the named identities of
// a task (wire.IdentityRenewRequest); the answer is keyed by
// structs.IdentityKey.
type RenewFunc func(ctx context.Context, allocID, task string, names []string) (map[string]string, error)

// IdentityStore is the optional part of a StateDB that keeps a task's
// renewed identities across client restarts (the servers keep only the
// tokens signed at placement).
type IdentityStore interface {
	PutTaskIdentities(allocID, task string, tokens map[string]string) error
	GetTaskIdentities(allocID, task string) (map[string]string, error)
}

// Retry delays of a failed renewal.
const (
	renewRetryMin = time.Second
	renewRetryMax = 30 * time.Second
)

// tokenTimes reads the "iat" and "exp" claims of a JWT without checking
// its signature (the servers check it; the client only schedules by it).
// ok is false when the token has no expiry or cannot be read.
func tokenTimes(tok string) (iat, exp time.Time, ok bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, time.Time{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	var c struct {
		IAT *float64 `json:"iat"`
		EXP *float64 `json:"exp"`
	}
	if json.Unmarshal(raw, &c) != nil || c.EXP == nil {
		return time.Time{}, time.Time{}, false
	}
	exp = time.Unix(int64(*c.EXP), 0)
	if c.IAT != nil {
		iat = time.Unix(int64(*c.IAT), 0)
	}
	return iat, exp, true
}

// renewable are the identities of task the client renews: those with a
// ttl that the task sees (env or file). Others are never read by anyone
// on the client.
func renewable(task *structs.Task) []*structs.WorkloadIdentity {
	var out []*structs.WorkloadIdentity
	for _, wi := range task.AllIdentities() {
		if wi.TTL > 0 && (wi.Env || wi.File) {
			out = append(out, wi)
		}
	}
	return out
}

// renewAt is when tok, an identity with ttl, is renewed: at half its
// lifetime, as in Nomad. A token without a readable expiry (signed before
// the ttl was set) is renewed at once.
func renewAt(tok string, ttl time.Duration) time.Time {
	iat, exp, ok := tokenTimes(tok)
	if !ok {
		return time.Time{}
	}
	if iat.IsZero() || !iat.Before(exp) {
		iat = exp.Add(-ttl)
	}
	return iat.Add(exp.Sub(iat) / 2)
}

// planRenewal decides, at now, which of task's identities are due for
// renewal (by name, sorted) and, when none is, when the next one is
// (zero when the task has none to renew). tokens are the task's current
// tokens by structs.IdentityKey.
func planRenewal(task *structs.Task, tokens map[string]string, now time.Time) (due []string, next time.Time) {
	for _, wi := range renewable(task) {
		at := renewAt(tokens[structs.IdentityKey(task.Name, wi)], wi.TTL)
		if !now.Before(at) {
			due = append(due, wi.Name)
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	slices.Sort(due)
	if len(due) > 0 {
		next = time.Time{}
	}
	return due, next
}

// retryDelay is the wait before renewal attempt failures+1: doubling from
// renewRetryMin up to renewRetryMax.
func retryDelay(failures int) time.Duration {
	d := renewRetryMin
	for i := 1; i < failures && d < renewRetryMax; i++ {
		d *= 2
	}
	return min(d, renewRetryMax)
}

// changeAction is what the task's change_mode asks for once the
// identities in renewed got new tokens: a restart (any restart wins, as
// it also delivers the new environment), else the distinct signals to
// send, in order.
func changeAction(task *structs.Task, renewed []string) (restart bool, signals []string) {
	for _, wi := range task.AllIdentities() {
		if !slices.Contains(renewed, wi.Name) {
			continue
		}
		switch wi.ChangeMode {
		case structs.IdentityChangeModeRestart:
			restart = true
		case structs.IdentityChangeModeSignal:
			if !slices.Contains(signals, wi.ChangeSignal) {
				signals = append(signals, wi.ChangeSignal)
			}
		}
	}
	if restart {
		signals = nil
	}
	return restart, signals
}

// currentAlloc is the task runner's allocation with the renewed tokens in
// SignedIdentities (a copy; the stored allocation is not changed).
func (tr *TaskRunner) currentAlloc() (*structs.Allocation, *structs.Task) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.tokens) == 0 {
		return tr.alloc, tr.task
	}
	a := *tr.alloc
	a.SignedIdentities = maps.Clone(tr.alloc.SignedIdentities)
	if a.SignedIdentities == nil {
		a.SignedIdentities = map[string]string{}
	}
	maps.Copy(a.SignedIdentities, tr.tokens)
	return &a, tr.task
}

// HoldsIdentity reports whether token is a renewed identity of the task.
func (tr *TaskRunner) HoldsIdentity(token string) bool {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, t := range tr.tokens {
		if t == token {
			return true
		}
	}
	return false
}

// restoreIdentities loads the renewed tokens a previous client process
// stored.
func (tr *TaskRunner) restoreIdentities() {
	s, ok := tr.db.(IdentityStore)
	if !ok {
		return
	}
	toks, err := s.GetTaskIdentities(tr.allocID, tr.name)
	if err != nil {
		tr.logger.Warn("restoring renewed identities", "error", err)
		return
	}
	tr.mu.Lock()
	tr.tokens = toks
	tr.mu.Unlock()
}

// renewIdentities renews the task's identities with a ttl until ctx ends:
// it waits for planRenewal's next time, has the due ones signed again,
// writes their files and carries out their change_mode.
func (tr *TaskRunner) renewIdentities(ctx context.Context) {
	failures := 0
	for {
		alloc, task := tr.currentAlloc()
		now := tr.now()
		due, next := planRenewal(task, alloc.SignedIdentities, now)
		if len(due) == 0 {
			wait := time.Duration(-1) // nothing to renew until an update adds some
			if !next.IsZero() {
				wait = next.Sub(now)
			}
			if !tr.sleep(ctx, wait) {
				return
			}
			continue
		}
		toks, err := tr.renew(ctx, tr.allocID, tr.name, due)
		if err != nil {
			failures++
			tr.logger.Warn("renewing workload identities", "identities", due, "error", err)
			if !tr.sleep(ctx, retryDelay(failures)) {
				return
			}
			continue
		}
		failures = 0
		tr.adoptIdentities(task, due, toks)
	}
}

// adoptIdentities keeps the renewed tokens, rewrites their files and
// applies the identities' change_mode.
func (tr *TaskRunner) adoptIdentities(task *structs.Task, due []string, toks map[string]string) {
	tr.mu.Lock()
	if tr.tokens == nil {
		tr.tokens = map[string]string{}
	}
	maps.Copy(tr.tokens, toks)
	kept := maps.Clone(tr.tokens)
	tr.mu.Unlock()
	if s, ok := tr.db.(IdentityStore); ok {
		if err := s.PutTaskIdentities(tr.allocID, tr.name, kept); err != nil {
			tr.logger.Warn("persisting renewed identities", "error", err)
		}
	}
	alloc, _ := tr.currentAlloc()
	if err := writeIdentityFiles(tr.allocDir.TaskDir(tr.name).Dir, alloc, task, due); err != nil {
		tr.logger.Error("writing renewed identities", "error", err)
	}
	restart, signals := changeAction(task, due)
	reason := "Workload identity renewed: " + strings.Join(due, ", ")
	if restart {
		if err := tr.requestRestart(func() { tr.restartReason = reason }); err != nil {
			tr.logger.Debug("identity change_mode restart: task not running")
		}
	}
	for _, sig := range signals {
		if err := tr.signal(sig, reason); err != nil {
			tr.logger.Debug("identity change_mode signal", "signal", sig, "error", err)
		}
	}
}

// sleep waits d (forever when negative), until an update of the task
// (Update) or until ctx ends (false).
func (tr *TaskRunner) sleep(ctx context.Context, d time.Duration) bool {
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-tr.identityCh:
		return true
	case <-ctx.Done():
		return false
	}
}
