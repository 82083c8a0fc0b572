package taskrunner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/mock"
	"github.com/drover-project/drover/nomad/structs"
)

// fakeJWT is a token whose claims are iat and exp (0: absent); its
// signature is not checked by the client.
func fakeJWT(t *testing.T, iat, exp time.Time) string {
	t.Helper()
	c := map[string]int64{}
	if !iat.IsZero() {
		c["iat"] = iat.Unix()
	}
	if !exp.IsZero() {
		c["exp"] = exp.Unix()
	}
	raw, err := json.Marshal(c)
	require.NoError(t, err)
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(raw) + ".c2ln"
}

func TestPlanRenewal(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	ttlID := func(name string, ttl time.Duration) *structs.WorkloadIdentity {
		return &structs.WorkloadIdentity{Name: name, File: true, TTL: ttl}
	}
	cases := []struct {
		name     string
		ids      []*structs.WorkloadIdentity
		tokens   map[string]string
		now      time.Time
		wantDue  []string
		wantNext time.Time
	}{
		{name: "no ttl: nothing to renew", ids: []*structs.WorkloadIdentity{{Name: "a", File: true}},
			tokens: map[string]string{"t/a": fakeJWT(t, t0, time.Time{})}, now: t0},
		{name: "not exposed: not renewed", ids: []*structs.WorkloadIdentity{{Name: "a", TTL: time.Hour}},
			tokens: map[string]string{"t/a": fakeJWT(t, t0, t0.Add(time.Hour))}, now: t0.Add(59 * time.Minute)},
		{name: "before half the ttl: wait for it", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour)},
			tokens: map[string]string{"t/a": fakeJWT(t, t0, t0.Add(time.Hour))}, now: t0.Add(10 * time.Minute),
			wantNext: t0.Add(30 * time.Minute)},
		{name: "at half the ttl: due", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour)},
			tokens: map[string]string{"t/a": fakeJWT(t, t0, t0.Add(time.Hour))}, now: t0.Add(30 * time.Minute),
			wantDue: []string{"a"}},
		{name: "expired: due", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour)},
			tokens: map[string]string{"t/a": fakeJWT(t, t0, t0.Add(time.Hour))}, now: t0.Add(2 * time.Hour),
			wantDue: []string{"a"}},
		{name: "no exp although the ttl is set (signed before): due", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour)},
			tokens: map[string]string{"t/a": fakeJWT(t, t0, time.Time{})}, now: t0, wantDue: []string{"a"}},
		{name: "missing token: due", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour)},
			now: t0, wantDue: []string{"a"}},
		{name: "no iat: half of the ttl before exp", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour)},
			tokens: map[string]string{"t/a": fakeJWT(t, time.Time{}, t0.Add(time.Hour))}, now: t0,
			wantNext: t0.Add(30 * time.Minute)},
		{name: "the earliest of several", ids: []*structs.WorkloadIdentity{ttlID("a", time.Hour), ttlID("b", 10*time.Minute)},
			tokens: map[string]string{
				"t/a": fakeJWT(t, t0, t0.Add(time.Hour)), "t/b": fakeJWT(t, t0, t0.Add(10*time.Minute)),
			}, now: t0, wantNext: t0.Add(5 * time.Minute)},
		{name: "due ones sorted, the default keyed by the task name",
			ids: []*structs.WorkloadIdentity{
				{Name: "default", Env: true, TTL: time.Minute}, ttlID("b", time.Minute), ttlID("c", time.Hour),
			},
			tokens: map[string]string{
				"t": fakeJWT(t, t0, t0.Add(time.Minute)), "t/b": fakeJWT(t, t0, t0.Add(time.Minute)),
				"t/c": fakeJWT(t, t0, t0.Add(time.Hour)),
			}, now: t0.Add(time.Minute), wantDue: []string{"b", "default"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := &structs.Task{Name: "t"}
			for _, wi := range tc.ids {
				if wi.Name == "default" {
					task.Identity = wi
				} else {
					task.Identities = append(task.Identities, wi)
				}
			}
			due, next := planRenewal(task, tc.tokens, tc.now)
			require.Equal(t, tc.wantDue, due)
			require.Equal(t, tc.wantNext, next)
		})
	}
}

func TestRetryDelay(t *testing.T) {
	for failures, want := range map[int]time.Duration{
		1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second,
	} {
		require.Equal(t, want, retryDelay(failures), "failures=%d", failures)
	}
}

func TestChangeAction(t *testing.T) {
	task := &structs.Task{Name: "t",
		Identity: &structs.WorkloadIdentity{Name: "default", ChangeMode: structs.IdentityChangeModeRestart},
		Identities: []*structs.WorkloadIdentity{
			{Name: "hup", ChangeMode: structs.IdentityChangeModeSignal, ChangeSignal: "SIGHUP"},
			{Name: "hup2", ChangeMode: structs.IdentityChangeModeSignal, ChangeSignal: "SIGHUP"},
			{Name: "usr1", ChangeMode: structs.IdentityChangeModeSignal, ChangeSignal: "SIGUSR1"},
			{Name: "noop", ChangeMode: structs.IdentityChangeModeNoop},
			{Name: "unset"},
		},
	}
	cases := []struct {
		renewed     []string
		wantRestart bool
		wantSignals []string
	}{
		{renewed: []string{"noop", "unset"}},
		{renewed: []string{"hup"}, wantSignals: []string{"SIGHUP"}},
		{renewed: []string{"hup", "hup2", "usr1", "noop"}, wantSignals: []string{"SIGHUP", "SIGUSR1"}},
		{renewed: []string{"hup", "default"}, wantRestart: true},
		{renewed: nil},
	}
	for _, tc := range cases {
		restart, signals := changeAction(task, tc.renewed)
		require.Equal(t, tc.wantRestart, restart, "%v", tc.renewed)
		require.Equal(t, tc.wantSignals, signals, "%v", tc.renewed)
	}
}

func TestTokenTimes(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	iat, exp, ok := tokenTimes(fakeJWT(t, t0, t0.Add(time.Hour)))
	require.True(t, ok)
	require.Equal(t, t0, iat)
	require.Equal(t, t0.Add(time.Hour), exp)
	for _, bad := range []string{"", "a.b", "a.!!!.c", "a." + base64.RawURLEncoding.EncodeToString([]byte("[]")) + ".c", fakeJWT(t, t0, time.Time{})} {
		_, _, ok := tokenTimes(bad)
		require.False(t, ok, bad)
	}
}

// TestIdentityRenewal: identities with a ttl get new tokens at half their
// ttl; the file is rewritten, the restart-mode identity restarts the task
// with the new token in its environment, the signal-mode one signals it,
// and the renewed tokens are persisted for a client restart.
func TestIdentityRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &recordingDriver{Driver: mock.New(nil)}
		task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{"run_for": "1h"},
			Identity: &structs.WorkloadIdentity{Name: "default", Env: true, File: true, TTL: time.Minute,
				ChangeMode: structs.IdentityChangeModeRestart},
			Identities: []*structs.WorkloadIdentity{
				{Name: "hup", File: true, TTL: 10*time.Minute + 30*time.Second, ChangeMode: structs.IdentityChangeModeSignal, ChangeSignal: "SIGHUP"},
			},
		}
		now := time.Now()
		var mu sync.Mutex
		var asked [][]string
		db := &identityDB{fakeDB: newFakeDB()}
		tr := newRunnerWith(t, task, d, func(c *Config) {
			c.StateDB = db
			c.Alloc.SignedIdentities = map[string]string{
				"web": fakeJWT(t, now, now.Add(time.Minute)), "web/hup": fakeJWT(t, now, now.Add(10*time.Minute+30*time.Second)),
			}
			c.RenewIdentities = func(_ context.Context, allocID, name string, ids []string) (map[string]string, error) {
				mu.Lock()
				asked = append(asked, ids)
				mu.Unlock()
				out := map[string]string{}
				for _, id := range ids {
					key, ttl := name, time.Minute
					if id != "default" {
						key, ttl = name+"/"+id, 10*time.Minute+30*time.Second
					}
					out[key] = fakeJWT(t, time.Now(), time.Now().Add(ttl)) + "-" + time.Now().Format(time.RFC3339)
				}
				return out, nil
			}
		})
		go tr.Run()
		synctest.Wait()
		require.Len(t, d.Started(), 1)
		first := d.Started()[0].Env["NOMAD_TOKEN"]
		tokenFile := filepath.Join(tr.allocDir.TaskDir("web").SecretsDir, "nomad_token")
		raw, err := os.ReadFile(tokenFile)
		require.NoError(t, err)
		require.Equal(t, first, string(raw))

		time.Sleep(29 * time.Second)
		synctest.Wait()
		require.Len(t, d.Started(), 1, "not renewed before half the ttl")

		time.Sleep(2 * time.Second) // past half of the default's minute
		synctest.Wait()
		raw, err = os.ReadFile(tokenFile)
		require.NoError(t, err)
		require.NotEqual(t, first, string(raw), "the file holds the renewed token")
		require.Len(t, d.Started(), 2, "change_mode restart restarted the task")
		require.Equal(t, string(raw), d.Started()[1].Env["NOMAD_TOKEN"], "with the new token in its environment")
		require.True(t, tr.HoldsIdentity(string(raw)))
		require.Equal(t, string(raw), db.identities()["web"], "the renewed token is persisted")
		require.Empty(t, d.Signals(tr.taskID))

		time.Sleep(5 * time.Minute) // past half of hup's ttl (5m15s), between two restarts
		synctest.Wait()
		var sent []string
		for _, e := range tr.State().Events {
			if e.Type == EventSignaling {
				sent = append(sent, e.Details[DetailSignal]+": "+e.DisplayMessage)
			}
		}
		require.Equal(t, []string{"SIGHUP: Task being sent signal SIGHUP: Workload identity renewed: hup"}, sent,
			"change_mode signal sent its signal")
		mu.Lock()
		require.Contains(t, asked, []string{"hup"})
		mu.Unlock()
	})
}

// identityDB is a fakeDB that keeps renewed identities (IdentityStore).
type identityDB struct {
	*fakeDB
	toks map[string]string
}

func (d *identityDB) PutTaskIdentities(_, _ string, toks map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.toks = maps.Clone(toks)
	return nil
}

func (d *identityDB) GetTaskIdentities(_, _ string) (map[string]string, error) {
	return d.identities(), nil
}

func (d *identityDB) identities() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.toks)
}

// TestIdentityRenewal_RestoredAfterClientRestart: a task runner of a
// restarted client takes the renewed tokens back from the state DB: they
// stand in for the servers' (older) ones, so nothing is renewed early.
func TestIdentityRenewal_RestoredAfterClientRestart(t *testing.T) {
	now := time.Now()
	task := &structs.Task{Name: "web", Driver: "mock", Config: map[string]any{},
		Identity: &structs.WorkloadIdentity{Name: "default", File: true, TTL: time.Hour}}
	renewed := fakeJWT(t, now, now.Add(time.Hour))
	db := &identityDB{fakeDB: newFakeDB(), toks: map[string]string{"web": renewed}}
	require.NoError(t, db.PutTaskState("a1", "web", &structs.TaskState{State: StateDead}))
	tr := newRunnerWith(t, task, &recordingDriver{Driver: mock.New(nil)}, func(c *Config) {
		c.StateDB = db
		c.Alloc.SignedIdentities = map[string]string{"web": fakeJWT(t, now.Add(-50*time.Minute), now.Add(10*time.Minute))}
	})
	require.NoError(t, tr.Restore())
	require.True(t, tr.HoldsIdentity(renewed))
	alloc, _ := tr.currentAlloc()
	require.Equal(t, renewed, alloc.SignedIdentities["web"])
	due, next := planRenewal(task, alloc.SignedIdentities, now)
	require.Empty(t, due, "the server's token is past half its life, the renewed one is not")
	require.Equal(t, now.Truncate(time.Second).Add(30*time.Minute), next)
}
