package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/nomad/api"
)

// Workload names the variables the workers use.
type Workload struct {
	RegKeys []string // check-and-set registers
	LockKey string   // the lock
	// JobID is a job used as a check-and-set register: its meta "v" is the
	// value, registered with the job modify index read (enforce index).
	// In the history its key is JobKey(JobID).
	JobID string
}

// DefaultWorkload is two registers, one lock and one job register.
var DefaultWorkload = Workload{RegKeys: []string{"chaos/reg0", "chaos/reg1"}, LockKey: "chaos/lock", JobID: "chaos-cas"}

// JobKey is the history's key of the job register of job id.
func JobKey(id string) string { return "job:" + id }

// workers issue operations against the cluster's servers until ctx ends,
// recording each into rec.
type workers struct {
	c    *Cluster
	rec  *Recorder
	w    Workload
	seed int64
	// granted are the lock IDs an acquire returned to some worker.
	mu      sync.Mutex
	granted map[string]bool
}

func (ws *workers) pause(rng *rand.Rand, lo, hi int) {
	time.Sleep(time.Duration(lo+rng.Intn(hi-lo+1)) * time.Millisecond)
}

// outcome classifies a write error: nil OK, a 409 a definite refusal,
// anything else (timeout, connection error, 5xx) unknown.
func outcome(err error) Outcome {
	if err == nil {
		return OK
	}
	var cas api.ErrCASConflict
	if errors.As(err, &cas) {
		return Fail
	}
	var ue api.UnexpectedResponseError
	if errors.As(err, &ue) && ue.StatusCode() == http.StatusConflict {
		return Fail
	}
	return Unknown
}

// register runs a CAS-register worker: it reads a key (default
// consistency) and writes it with check-and-set against the index it read.
func (ws *workers) register(ctx context.Context, id int) {
	rng := rand.New(rand.NewSource(ws.seed*1000 + int64(id)))
	type seen struct {
		value string
		index uint64
	}
	know := map[string]*seen{}
	for n := 0; ctx.Err() == nil; n++ {
		key := ws.w.RegKeys[rng.Intn(len(ws.w.RegKeys))]
		srv := ws.c.Servers[rng.Intn(len(ws.c.Servers))]
		k := know[key]
		if k == nil || rng.Intn(2) == 0 {
			op := Op{Worker: id, Server: srv.Index, Kind: RegRead, Key: key, Call: ws.rec.Now()}
			v, _, err := srv.API.Variables().Read(key, nil)
			op.Return = ws.rec.Now()
			switch {
			case errors.Is(err, api.ErrVariablePathNotFound):
				know[key] = &seen{}
				ws.rec.Add(op)
			case err == nil:
				op.Value = v.Items["v"]
				know[key] = &seen{op.Value, v.ModifyIndex}
				ws.rec.Add(op)
			default:
				delete(know, key) // not recorded: a read that answered nothing changed nothing
			}
		} else {
			val := fmt.Sprintf("w%d-%d", id, n)
			op := Op{Worker: id, Server: srv.Index, Kind: RegWrite, Key: key, Expect: k.value, Value: val, Call: ws.rec.Now()}
			out, _, err := srv.API.Variables().CheckedUpdate(&api.Variable{Path: key, Items: api.VariableItems{"v": val}, ModifyIndex: k.index}, nil)
			op.Return = ws.rec.Now()
			op.Outcome = outcome(err)
			ws.rec.Add(op)
			if op.Outcome == OK {
				know[key] = &seen{val, out.ModifyIndex}
			} else {
				delete(know, key)
			}
		}
		ws.pause(rng, 15, 45)
	}
}

// stale runs a ?stale reader.
func (ws *workers) stale(ctx context.Context, id int) {
	rng := rand.New(rand.NewSource(ws.seed*1000 + int64(id)))
	for ctx.Err() == nil {
		key := ws.w.RegKeys[rng.Intn(len(ws.w.RegKeys))]
		srv := ws.c.Servers[rng.Intn(len(ws.c.Servers))]
		op := Op{Worker: id, Server: srv.Index, Kind: StaleRead, Key: key, Call: ws.rec.Now()}
		v, _, err := srv.API.Variables().Read(key, &api.QueryOptions{AllowStale: true})
		op.Return = ws.rec.Now()
		if err == nil {
			op.Value = v.Items["v"]
			ws.rec.Add(op)
		} else if errors.Is(err, api.ErrVariablePathNotFound) {
			ws.rec.Add(op)
		}
		ws.pause(rng, 20, 60)
	}
}

// lockTTL is long enough that no lock expires during a run (the longest
// a lock may be held): the lock model has no expiry, and ResolveAcquires
// counts on a ghost staying held until a read finds it.
const lockTTL = "24h"

// tokenItem is the item an acquire writes its token under.
const tokenItem = "by"

// setHolder records in a lock read what v, the lock variable read, holds:
// the holder's lock ID ("" free) and the token stored with it.
func (o *Op) setHolder(v *api.Variable) {
	if v.Lock != nil {
		o.LockID = v.Lock.ID
	}
	o.Value = v.Items[tokenItem]
}

// lock runs a lock worker: acquire, hold briefly, release (retrying a
// release of unknown outcome); after an acquire of unknown outcome it
// reads the holder and releases a lock nobody was granted (a ghost). Each
// acquire writes a token unique to it into the variable's items, so a read
// tells which acquire holds (ResolveAcquires).
func (ws *workers) lock(ctx context.Context, id int) {
	rng := rand.New(rand.NewSource(ws.seed*1000 + int64(id)))
	key := ws.w.LockKey
	srv := func() *Server { return ws.c.Servers[rng.Intn(len(ws.c.Servers))] }
	release := func(lockID string) {
		for tries := 0; ctx.Err() == nil || tries < 100; tries++ {
			s := srv()
			op := Op{Worker: id, Server: s.Index, Kind: LockRelease, Key: key, LockID: lockID, Call: ws.rec.Now()}
			_, _, err := s.API.Variables().ReleaseLock(&api.Variable{Path: key, Lock: &api.VariableLock{ID: lockID}}, nil)
			op.Return = ws.rec.Now()
			op.Outcome = outcome(err)
			ws.rec.Add(op)
			if op.Outcome != Unknown {
				return
			}
			ws.pause(rng, 100, 300) // retried after the run too: nothing stays held
		}
	}
	read := func() (lockID, token string, ok bool) {
		s := srv()
		op := Op{Worker: id, Server: s.Index, Kind: LockRead, Key: key, Call: ws.rec.Now()}
		v, _, err := s.API.Variables().Read(key, nil)
		op.Return = ws.rec.Now()
		switch {
		case errors.Is(err, api.ErrVariablePathNotFound):
		case err == nil:
			op.setHolder(v)
		default:
			return "", "", false
		}
		ws.rec.Add(op)
		return op.LockID, op.Value, true
	}
	for seq := 0; ctx.Err() == nil; seq++ {
		if rng.Intn(4) == 0 {
			read()
		}
		s := srv()
		token := fmt.Sprintf("w%d-%d", id, seq)
		op := Op{Worker: id, Server: s.Index, Kind: LockAcquire, Key: key, Value: token, Call: ws.rec.Now()}
		out, _, err := s.API.Variables().AcquireLock(&api.Variable{Path: key, Items: api.VariableItems{tokenItem: token},
			Lock: &api.VariableLock{TTL: lockTTL, LockDelay: "10s"}}, nil)
		op.Return = ws.rec.Now()
		op.Outcome = outcome(err)
		if op.Outcome == OK {
			if out.Lock == nil || out.Lock.ID == "" {
				op.Outcome = Unknown // acknowledged without a lock: cannot be modelled
			} else {
				op.LockID = out.Lock.ID
				ws.mu.Lock()
				ws.granted[op.LockID] = true
				ws.mu.Unlock()
			}
		}
		ws.rec.Add(op)
		switch op.Outcome {
		case OK:
			ws.pause(rng, 20, 100)
			release(op.LockID)
		case Unknown:
			// Our acquire may hold the lock under an ID nobody knows:
			// find it and release it, once it is clearly not granted.
			for ctx.Err() == nil {
				holder, by, ok := read()
				if !ok {
					ws.pause(rng, 100, 300)
					continue
				}
				if holder == "" {
					break
				}
				if by == token { // our own acquire took: release it
					release(holder)
					break
				}
				time.Sleep(500 * time.Millisecond) // a grant may be on its way back to its worker
				ws.mu.Lock()
				g := ws.granted[holder]
				ws.mu.Unlock()
				if !g {
					release(holder)
				}
				break
			}
		}
		ws.pause(rng, 20, 60)
	}
}

// jobOutcome classifies a job register error: nil OK; the server's
// refusal of the enforced index (400 "Enforcing job modify index") a
// definite refusal; anything else unknown.
func jobOutcome(err error) Outcome {
	var ue api.UnexpectedResponseError
	if errors.As(err, &ue) && ue.StatusCode() == http.StatusBadRequest && strings.Contains(ue.Body(), "Enforcing job modify index") {
		return Fail
	}
	return outcome(err)
}

// casJob is the job of the job register holding value.
func casJob(id, value string) *api.Job {
	job := api.NewServiceJob(id, id, "global", 50)
	job.Datacenters = []string{"dc1"}
	job.Meta = map[string]string{"v": value}
	task := api.NewTask("t", "raw_exec").SetConfig("command", "/bin/true")
	job.AddTaskGroup(api.NewTaskGroup("g", 0).AddTask(task)) // nothing to place: the job is the register
	return job
}

// readJob reads the job register through srv: its value ("" when the job
// does not exist) and job modify index; ok false when srv did not answer.
func readJob(srv *Server, id string) (value string, index uint64, ok bool) {
	job, _, err := srv.API.Jobs().Info(id, nil)
	var ue api.UnexpectedResponseError
	switch {
	case err == nil:
		return job.Meta["v"], *job.JobModifyIndex, true
	case errors.As(err, &ue) && ue.StatusCode() == http.StatusNotFound:
		return "", 0, true
	default:
		return "", 0, false
	}
}

// jobs runs a job-register worker: it reads the job (default consistency)
// and registers a new value with the job modify index it read enforced.
func (ws *workers) jobs(ctx context.Context, id int) {
	rng := rand.New(rand.NewSource(ws.seed*1000 + int64(id)))
	key := JobKey(ws.w.JobID)
	var known *struct {
		value string
		index uint64
	}
	for n := 0; ctx.Err() == nil; n++ {
		srv := ws.c.Servers[rng.Intn(len(ws.c.Servers))]
		if known == nil || rng.Intn(2) == 0 {
			op := Op{Worker: id, Server: srv.Index, Kind: RegRead, Key: key, Call: ws.rec.Now()}
			v, idx, ok := readJob(srv, ws.w.JobID)
			op.Return = ws.rec.Now()
			if ok {
				op.Value = v
				known = &struct {
					value string
					index uint64
				}{v, idx}
				ws.rec.Add(op)
			} else {
				known = nil // not recorded: a read that answered nothing changed nothing
			}
		} else {
			val := fmt.Sprintf("w%d-%d", id, n)
			op := Op{Worker: id, Server: srv.Index, Kind: RegWrite, Key: key, Expect: known.value, Value: val, Call: ws.rec.Now()}
			_, _, err := srv.API.Jobs().EnforceRegister(casJob(ws.w.JobID, val), known.index, nil)
			op.Return = ws.rec.Now()
			op.Outcome = jobOutcome(err)
			ws.rec.Add(op)
			known = nil // the new job modify index is read again
		}
		ws.pause(rng, 40, 120)
	}
}
