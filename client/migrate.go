package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/drover-project/drover/client/allocrunner"
	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

// ephemeral_disk migrate between nodes. The server tells the node of a
// replacement where its previous allocation ran (PreviousNodeAddr) and
// gives it a token for that allocation only (structs.MigrateToken, keyed by
// the previous node's secret). The replacement's client asks the previous
// node's client for the snapshot:
//
//	GET /v1/client/allocation/{id}/snapshot   X-Nomad-Token: <migrate token>
//
// 200: a tar stream of alloc/data and each task's local/ (aborted, never
// cut short cleanly, on a read error); 409 while the allocation's tasks
// still run; 404 once the allocation is gone from that node; 403 for any
// other token (nothing else is accepted, not even a management token).

// prevPeer is where a new allocation's previous allocation ran on another
// node, as the server's list said.
type prevPeer struct {
	addr, token string
}

// handleAllocSnapshot serves a stopped allocation's ephemeral data to its
// replacement's client.
func (c *Client) handleAllocSnapshot(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !structs.MigrateTokenValid(id, c.secretID, requestToken(r)) {
		writeError(w, &httpError{Code: http.StatusForbidden, Msg: "Permission denied"})
		return
	}
	ar := c.runner(id)
	if ar == nil {
		writeError(w, notFound("Unknown allocation %q", id))
		return
	}
	a := ar.Alloc()
	if tg := a.Job.LookupTaskGroup(a.TaskGroup); tg == nil || tg.EphemeralDisk == nil || !tg.EphemeralDisk.Migrate {
		writeError(w, &httpError{Code: http.StatusForbidden, Msg: "allocation " + id + ": its ephemeral disk does not migrate"})
		return
	}
	select {
	case <-ar.TasksExitedCh():
	default:
		writeError(w, &httpError{Code: http.StatusConflict, Msg: allocrunner.ErrStillRunning.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/x-tar")
	if err := ar.WriteSnapshot(w); err != nil {
		c.logger.Error("failed to send allocation data to its replacement", "alloc_id", id, "error", err)
		// Abort the response: the receiver must see a broken stream, not
		// a short archive that looks complete.
		panic(http.ErrAbortHandler)
	}
}

// peerFetcher fetches a previous allocation's data from its node's client
// (allocrunner.PrevDataFetcher).
type peerFetcher struct {
	http   *http.Client
	url    string // .../v1/client/allocation/<prev>/snapshot
	token  string
	poll   time.Duration // between asks while the allocation runs
	giveUp time.Duration // how long the node may stay unreachable
	idle   time.Duration // how long the node may send nothing; 0 is defaultMigrateIdle
	now    func() time.Time
	logger hclog.Logger
}

var _ allocrunner.PrevDataFetcher = (*peerFetcher)(nil)

// newPeerFetcher returns the fetcher of prevID's data from peer.
func (c *Client) newPeerFetcher(prevID string, peer prevPeer) *peerFetcher {
	scheme := c.cfg.PeerScheme
	if scheme == "" {
		scheme = "http"
	}
	return &peerFetcher{
		http:   &http.Client{Transport: c.cfg.PeerTransport},
		url:    baseURL(scheme, peer.addr) + "/v1/client/allocation/" + url.PathEscape(prevID) + "/snapshot",
		token:  peer.token,
		poll:   c.cfg.timing.migratePoll,
		giveUp: c.cfg.timing.migrateGiveUp,
		idle:   c.cfg.timing.migrateIdle,
		now:    c.cfg.Now,
		logger: c.logger.Named("migrate").With("previous_alloc_id", prevID),
	}
}

// Fetch asks until the previous node answers with the data (200), says the
// allocation is gone (404) or refuses (403), or has been unreachable (or
// failing with 5xx) for giveUp; a 409 (still running) is asked again after
// poll, however long it takes, as the replacement must not start before
// its previous allocation stopped.
func (p *peerFetcher) Fetch(ctx context.Context) (io.ReadCloser, error) {
	var failingSince time.Time
	for {
		body, retry, err := p.ask(ctx)
		if err == nil {
			return body, nil
		}
		if !retry {
			return nil, err
		}
		var se *wire.StatusError
		if errors.As(err, &se) && se.Code == http.StatusConflict {
			failingSince = time.Time{}
		} else {
			if failingSince.IsZero() {
				failingSince = p.now()
			}
			if p.now().Sub(failingSince) >= p.giveUp {
				return nil, fmt.Errorf("previous node unreachable for %s: %w", p.giveUp, err)
			}
			p.logger.Debug("previous node did not answer; asking again", "error", err)
		}
		if !sleepCtx(ctx, p.poll) {
			return nil, ctx.Err()
		}
	}
}

// ask makes one request; retry says whether another may succeed. The
// request is cancelled when the peer sends nothing for idle, answer or
// body alike.
func (p *peerFetcher) ask(parent context.Context) (io.ReadCloser, bool, error) {
	ctx, cancel := context.WithCancelCause(parent)
	idle := p.idle
	if idle <= 0 {
		idle = defaultMigrateIdle
	}
	timer := time.AfterFunc(idle, func() { cancel(fmt.Errorf("previous node sent nothing for %s", idle)) })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		cancel(nil)
		return nil, false, err
	}
	req.Header.Set("X-Nomad-Token", p.token)
	resp, err := p.http.Do(req)
	if err != nil {
		timer.Stop()
		if cause := context.Cause(ctx); cause != nil && parent.Err() == nil {
			err = cause // the idle timer fired
		}
		cancel(nil)
		return nil, parent.Err() == nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return &idleBody{body: resp.Body, ctx: ctx, timer: timer, idle: idle, cancel: cancel}, false, nil
	}
	timer.Stop()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	cancel(nil)
	err = &wire.StatusError{Code: resp.StatusCode, Msg: strings.TrimSpace(string(msg))}
	retry := resp.StatusCode == http.StatusConflict || resp.StatusCode >= 500
	return nil, retry, err
}

// defaultMigrateIdle is how long a peer may send nothing before a fetch
// gives up on it.
const defaultMigrateIdle = 30 * time.Second

// idleBody is a snapshot stream whose request is cancelled when no byte
// arrives for idle; a read then fails with the reason.
type idleBody struct {
	body   io.ReadCloser
	ctx    context.Context
	timer  *time.Timer
	idle   time.Duration
	cancel context.CancelCauseFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if cause := context.Cause(b.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = cause
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel(nil)
	return err
}
