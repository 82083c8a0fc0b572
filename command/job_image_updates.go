package command

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/wire"
)

const jobImageUpdatesHelp = `Usage: drover job image-updates [options] <job>

  Image-updates shows, for every Docker task of the job, the image reference
  it follows, the digest pinned in the current version, the last registry
  check and its answer, a new digest waiting for its soak (and how long it
  still waits), and the digests of the image that failed a deployment of
  any job on it (rolled to no job until cleared). An image stored by tag
  only says why it is not pinned. Tasks with auto_update = true or "notify"
  are followed by the leader's image watcher.

  A pending digest shows what holds it (Status): its soak
  (auto_update_soak), the image's age (auto_update_min_age, from the image
  config's created time), "notify" (auto_update = "notify": reported here,
  on the event stream (topic ImageUpdate) and in the metric
  drover_image_updates_pending, never rolled), an approval
  (auto_update_approval = true: the version is prepared with the digest
  pinned and waits for -approve), or the next opening of an
  auto_update_window ("waiting for window <time>").

Image-updates Options:

  -check
    Check the job's auto-updated images now instead of waiting for the next
    interval (the soak still applies), then show the result. A pipeline that
    just pushed a new image calls this.

  -clear-bad <digest>
    Clear a bad digest of the job's images: the image watcher may roll it
    again, to every job on the image (once the tag points at it and the
    soak has passed). A later failed deployment marks it bad again.
    Requires submit-job.

  -approve
    Approve the digests pending approval of the job's tasks with
    auto_update_approval = true. The approval is of those digests (a later
    move of the tag needs another) and is kept in raft, so it survives a
    change of leader; the image watcher then rolls the new version through
    the job's update block once the window (if any) is open. Requires
    submit-job.

  -digest <digest>
    With -approve: approve only if this is the digest pending (a guard
    against a tag that moved again after you looked).

  -json
    Output the answer as JSON.`

// jobImageUpdates implements `drover job image-updates`.
func jobImageUpdates(m *Meta, args []string) int {
	fs := m.FlagSet("job image-updates")
	var check, jsonOut, approve bool
	var clearBad, digest string
	fs.BoolVar(&check, "check", false, "")
	fs.StringVar(&clearBad, "clear-bad", "", "")
	fs.BoolVar(&approve, "approve", false, "")
	fs.StringVar(&digest, "digest", "", "")
	fs.BoolVar(&jsonOut, "json", false, "")
	if code, ok := m.parse(fs, args, jobImageUpdatesHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <job>", jobImageUpdatesHelp)
	}
	if n := btoi(check) + btoi(clearBad != "") + btoi(approve); n > 1 {
		return m.usageError("-check, -clear-bad and -approve cannot be used together", jobImageUpdatesHelp)
	}
	if digest != "" && !approve {
		return m.usageError("-digest goes with -approve", jobImageUpdatesHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	path := "/v1/job/" + url.PathEscape(stub.ID) + "/image-updates"
	var st wire.ImageUpdates
	var err error
	switch {
	case check:
		_, err = c.Raw().Write(path+"/check", nil, &st, &api.WriteOptions{Namespace: jobStubNamespace(stub)})
	case clearBad != "":
		_, err = c.Raw().Write(path+"/clear-bad", &wire.ImageClearBadRequest{Digest: clearBad}, &st,
			&api.WriteOptions{Namespace: jobStubNamespace(stub)})
	case approve:
		_, err = c.Raw().Write(path+"/approve", &wire.ImageApproveRequest{Digest: digest}, &st,
			&api.WriteOptions{Namespace: jobStubNamespace(stub)})
	default:
		_, err = c.Raw().Query(path, &st, jobQuery(stub))
	}
	if err != nil {
		m.errorf("Error querying image updates: %s", err)
		return 1
	}
	if jsonOut {
		return m.printJSON(st)
	}
	m.outf("%s", formatImageUpdates(&st, time.Now()))
	return 0
}

// formatImageUpdates renders st, one block per Docker task.
func formatImageUpdates(st *wire.ImageUpdates, now time.Time) string {
	if len(st.Tasks) == 0 {
		return fmt.Sprintf("Job %q version %d has no Docker task", st.JobID, st.Version)
	}
	var blocks []string
	for _, t := range st.Tasks {
		rows := []string{
			fmt.Sprintf("Task|%s/%s", t.Group, t.Task),
			"Reference|" + orDash(t.Reference),
			"Pinned Digest|" + orDash(t.Pinned),
		}
		if t.Unpinned != "" {
			rows = append(rows, "Not Pinned|"+t.Unpinned)
		}
		if t.Assumed != "" {
			rows = append(rows, "Assumed Running|"+t.Assumed)
		}
		mode := fmt.Sprint(t.AutoUpdate)
		if t.Mode == "notify" {
			mode = "notify (reported, never rolled)"
		}
		rows = append(rows, "Auto Update|"+mode)
		if t.AutoUpdate {
			rows = append(rows, "Interval|"+t.Interval.String(), "Soak|"+t.Soak.String())
			if t.MinAge > 0 {
				rows = append(rows, "Min Age|"+t.MinAge.String())
			}
			if t.Window != "" {
				rows = append(rows, "Window|"+t.Window)
			}
			if t.Approval {
				rows = append(rows, "Approval|required")
			}
		}
		if !t.LastCheck.IsZero() {
			result := "ok: " + t.TagDigest
			if t.LastError != "" {
				result = "error: " + t.LastError
			}
			rows = append(rows,
				"Last Check|"+formatTime(t.LastCheck),
				"Last Result|"+result,
				fmt.Sprintf("Checks|%d (%d failed)", t.Checks, t.Errors))
			if t.AutoUpdate {
				rows = append(rows, "Next Check|"+formatTime(t.NextCheck))
			}
		} else if t.AutoUpdate {
			rows = append(rows, "Last Check|never")
		}
		if t.Pending != "" {
			since := "not yet seen by the image watcher (the soak starts at its next check)"
			if !t.PendingSince.IsZero() {
				since = formatTime(t.PendingSince)
			}
			rows = append(rows, "Pending Digest|"+t.Pending,
				"Pending Since|"+since,
				"Soak Left|"+t.SoakLeft.Round(time.Second).String())
			if !t.ImageCreated.IsZero() {
				rows = append(rows, "Image Created|"+formatTime(t.ImageCreated))
			}
			if t.WaitingFor != "" {
				rows = append(rows, "Status|"+t.WaitingFor)
			}
			if t.Prepared != "" {
				state := "approved"
				if t.PendingApproval {
					state = "pending approval (drover job image-updates -approve " + st.JobID + ")"
				}
				rows = append(rows, "Prepared Image|"+t.Prepared, "Approval State|"+state)
			}
		}
		if len(t.Bad) > 0 {
			rows = append(rows, "Bad Digests|"+strings.Join(t.Bad, ", "))
		}
		if r := t.LastRoll; r != nil {
			rows = append(rows, fmt.Sprintf("Last Update|version %d: %s -> %s at %s", r.JobVersion, orDash(r.From), r.To, formatUnixNano(r.Time)))
		}
		blocks = append(blocks, formatKV(rows))
	}
	return strings.Join(blocks, "\n\n")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
