package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// probe runs c once with a short real timeout (these tests use the
// network, so they cannot run in a synctest bubble).
// probe runs one check that must end on its own (generous timeout: the
// machine may be loaded).
func probe(t *testing.T, c CheckDef) Outcome {
	t.Helper()
	return probeWithin(t, c, 10*time.Second)
}

// probeWithin runs one check that must end on its own well within d.
func probeWithin(t *testing.T, c CheckDef, d time.Duration) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return Probe(ctx, c)
}

func hostPort(rawURL string) string {
	return strings.TrimPrefix(strings.TrimPrefix(rawURL, "http://"), "https://")
}

func TestProbeHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(context.Background())
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte("fine"))
		case "/moved":
			http.Redirect(w, r, "/nowhere", http.StatusFound)
		case "/nowhere":
			http.Error(w, "should not be followed", http.StatusInternalServerError)
		case "/slow":
			<-r.Context().Done()
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	addr := hostPort(srv.URL)

	out := probe(t, CheckDef{Type: CheckHTTP, Address: addr, Path: "ok", Method: "POST", Header: map[string][]string{"X-Probe": {"1"}}, Body: "ping"})
	require.True(t, out.Passing, out.Output)
	require.Equal(t, 200, out.StatusCode)
	require.Equal(t, "HTTP POST http://"+addr+"/ok: 200 OK Output: fine", out.Output)
	mu.Lock()
	require.Equal(t, "POST", seen.Method)
	require.Equal(t, "1", seen.Header.Get("X-Probe"))
	mu.Unlock()

	out = probe(t, CheckDef{Type: CheckHTTP, Address: addr, Path: "/moved"})
	require.True(t, out.Passing, "3xx passes and is not followed: %s", out.Output)
	require.Equal(t, http.StatusFound, out.StatusCode)

	out = probe(t, CheckDef{Type: CheckHTTP, Address: addr, Path: "/broken"})
	require.False(t, out.Passing)
	require.Equal(t, 500, out.StatusCode)
	require.Contains(t, out.Output, "500 Internal Server Error Output: broken")

	began := time.Now()
	out = probeWithin(t, CheckDef{Type: CheckHTTP, Address: addr, Path: "/slow"}, 300*time.Millisecond)
	require.False(t, out.Passing)
	require.Contains(t, out.Output, "context deadline exceeded")
	require.Less(t, time.Since(began), time.Second)
}

func TestProbeHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	out := probe(t, CheckDef{Type: CheckHTTP, Protocol: "https", Address: hostPort(srv.URL), Path: "/"})
	require.False(t, out.Passing, "the test server's certificate is not trusted")
	require.Contains(t, out.Output, "https://")
	require.Contains(t, out.Output, "certificate")
}

func TestProbeTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	out := probe(t, CheckDef{Type: CheckTCP, Address: addr})
	require.True(t, out.Passing, out.Output)
	require.Equal(t, "TCP connect "+addr+": Success", out.Output)

	require.NoError(t, ln.Close())
	out = probe(t, CheckDef{Type: CheckTCP, Address: addr})
	require.False(t, out.Passing)
	require.Contains(t, out.Output, "connection refused")
}

func TestProbeUnresolvable(t *testing.T) {
	out := Probe(context.Background(), CheckDef{Type: CheckTCP, Err: `port label "db" is not a port of the allocation`})
	require.False(t, out.Passing)
	require.Equal(t, `port label "db" is not a port of the allocation`, out.Output)
	out = Probe(context.Background(), CheckDef{Type: "grpc", Address: "127.0.0.1:1"})
	require.False(t, out.Passing)
	require.Equal(t, `unsupported check type "grpc"`, out.Output)
}

// scriptedProber answers each check from a function of the probe time.
type scriptedProber struct {
	mu     sync.Mutex
	calls  map[string][]time.Time
	answer func(id string, now time.Time) Outcome
}

func (p *scriptedProber) probe(ctx context.Context, c CheckDef) Outcome {
	p.mu.Lock()
	if p.calls == nil {
		p.calls = map[string][]time.Time{}
	}
	p.calls[c.ID] = append(p.calls[c.ID], time.Now())
	p.mu.Unlock()
	return p.answer(c.ID, time.Now())
}

func (p *scriptedProber) callTimes(id string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Time(nil), p.calls[id]...)
}

func TestCheckerRunsAtIntervalAndTracksSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := &scriptedProber{answer: func(id string, now time.Time) Outcome {
			if id == "web" && now.Sub(start) >= 20*time.Second {
				return Outcome{Passing: true, StatusCode: 200, Output: "ok"}
			}
			return Outcome{Output: "down"}
		}}
		changed := 0
		var mu sync.Mutex
		c := NewChecker(CheckerConfig{
			Checks: []CheckDef{
				{ID: "web", Name: "web", Interval: 5 * time.Second, Timeout: time.Second},
				{ID: "db", Name: "db", Interval: 10 * time.Second, InitialPassed: true},
			},
			Probe:    p.probe,
			OnChange: func() { mu.Lock(); changed++; mu.Unlock() },
		}, start)

		// Before Start: pending, or passing per initial_status.
		res := c.Results()
		require.Len(t, res, 2)
		require.Equal(t, "db", res[0].Def.ID)
		require.Equal(t, StatusSuccess, res[0].Status)
		require.Equal(t, StatusPending, res[1].Status)
		require.True(t, res[1].Timestamp.IsZero())
		require.Equal(t, start, res[1].Since)

		c.Start(context.Background())
		synctest.Wait()
		res = c.Results()
		require.Equal(t, StatusFailure, res[0].Status, "the first probe replaces the initial status")
		require.Equal(t, start, res[0].Since)
		require.Equal(t, "down", res[0].Output)
		require.Equal(t, StatusFailure, res[1].Status)

		time.Sleep(25 * time.Second)
		synctest.Wait()
		res = c.Results()
		require.Equal(t, StatusSuccess, res[1].Status)
		require.True(t, res[1].Passing())
		require.Equal(t, start.Add(20*time.Second), res[1].Since, "since the first passing probe")
		require.Equal(t, start.Add(25*time.Second), res[1].Timestamp, "latest probe")
		require.Equal(t, 200, res[1].StatusCode)
		require.Len(t, p.callTimes("web"), 6, "at 0, 5, 10, 15, 20, 25s")
		require.Equal(t, []time.Time{start, start.Add(10 * time.Second), start.Add(20 * time.Second)}, p.callTimes("db"))
		mu.Lock()
		require.Equal(t, 3, changed, "db pass→fail, web pending→fail, web fail→pass")
		mu.Unlock()

		c.Stop()
		time.Sleep(time.Minute)
		require.Len(t, p.callTimes("web"), 6, "no probe after Stop")
	})
}

func TestCheckerAppliesTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked := func(ctx context.Context, c CheckDef) Outcome {
			<-ctx.Done()
			return Outcome{Output: ctx.Err().Error()}
		}
		start := time.Now()
		c := NewChecker(CheckerConfig{Checks: []CheckDef{{ID: "x", Interval: 10 * time.Second, Timeout: 2 * time.Second}}, Probe: blocked}, start)
		c.Start(context.Background())
		time.Sleep(3 * time.Second)
		synctest.Wait()
		r := c.Results()[0]
		require.Equal(t, StatusFailure, r.Status)
		require.Equal(t, start.Add(2*time.Second), r.Timestamp)
		require.Equal(t, "context deadline exceeded", r.Output)
		c.Stop()
	})
}
