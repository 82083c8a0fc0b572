package command

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
	"github.com/drover-project/drover/wire"
)

func TestFormatImageUpdates(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &wire.ImageUpdates{JobID: "web", Version: 3, Tasks: []structs.ImageTaskStatus{{
		Group: "web", Task: "server", Reference: "reg/app:stable", Pinned: "sha256:a", AutoUpdate: true,
		Interval: time.Minute, Soak: 5 * time.Minute, LastCheck: now, TagDigest: "sha256:b", NextCheck: now.Add(time.Minute),
		Pending: "sha256:b", PendingSince: now.Add(-time.Minute), SoakLeft: 4 * time.Minute,
		Bad: []string{"sha256:x"}, LastRoll: &structs.ImageRoll{From: "sha256:z", To: "sha256:a", JobVersion: 2, Time: now.UnixNano()},
		Checks: 7, Errors: 1,
	}, {Group: "web", Task: "side", Reference: "reg/side:1", Pinned: "sha256:s", LastCheck: now, LastError: "HEAD: 503", Checks: 1, Errors: 1}}}
	out := formatImageUpdates(st, now)
	for _, want := range []string{
		"Task           = web/server", "Reference      = reg/app:stable", "Pinned Digest  = sha256:a",
		"Last Result    = ok: sha256:b", "Pending Digest = sha256:b", "Soak Left      = 4m0s",
		"Bad Digests    = sha256:x", "Last Update    = version 2: sha256:z -> sha256:a", "Checks         = 7 (1 failed)",
		"Last Result   = error: HEAD: 503", "Auto Update   = false",
	} {
		require.Contains(t, out, want)
	}
	require.Contains(t, formatImageUpdates(&wire.ImageUpdates{JobID: "x"}, now), "has no Docker task")

	unpinned := formatImageUpdates(&wire.ImageUpdates{JobID: "web", Tasks: []structs.ImageTaskStatus{{
		Group: "web", Task: "server", Reference: "reg/app:v1", AutoUpdate: true, Interval: time.Minute,
		Unpinned: "the tag was not resolved when this version was registered (its registry could not be reached, or image_pinning was off)", Assumed: "sha256:a",
		LastCheck: now, TagDigest: "sha256:b", Pending: "sha256:b", SoakLeft: time.Minute,
	}}}, now)
	for _, want := range []string{
		"Pinned Digest   = -", "Not Pinned      = the tag was not resolved when this version was registered (its registry could not be reached, or image_pinning was off)",
		"Assumed Running = sha256:a", "Pending Since   = not yet seen by the image watcher",
	} {
		require.Contains(t, unpinned, want)
	}
}

func TestFormatImageUpdates_Gates(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	task := structs.ImageTaskStatus{Group: "web", Task: "server", Reference: "reg/app:stable", Pinned: "sha256:a",
		AutoUpdate: true, Mode: "roll", Interval: time.Minute, Approval: true, MinAge: time.Hour,
		Window: "Sat 02:00-04:00 Europe/Berlin", LastCheck: now, TagDigest: "sha256:b", Pending: "sha256:b",
		PendingSince: now.Add(-time.Hour), ImageCreated: now.Add(-2 * time.Hour), Waiting: "approval",
		WaitingFor: "waiting for approval (drover job image-updates -approve)", Prepared: "reg/app:stable@sha256:b",
		PendingApproval: true}
	out := formatImageUpdates(&wire.ImageUpdates{JobID: "web", Tasks: []structs.ImageTaskStatus{task}}, now)
	for _, want := range []string{
		"Auto Update    = true", "Min Age        = 1h0m0s", "Window         = Sat 02:00-04:00 Europe/Berlin",
		"Approval       = required", "Image Created  = ", "Status         = waiting for approval",
		"Prepared Image = reg/app:stable@sha256:b", "Approval State = pending approval (drover job image-updates -approve web)",
	} {
		require.Contains(t, out, want)
	}
	task.PendingApproval, task.Approved = false, "sha256:b"
	task.Waiting, task.WaitingFor = "window", "waiting for window 2026-01-03T01:00:00Z (Sat 02:00-04:00 Europe/Berlin)"
	out = formatImageUpdates(&wire.ImageUpdates{JobID: "web", Tasks: []structs.ImageTaskStatus{task}}, now)
	require.Contains(t, out, "Approval State = approved")
	require.Contains(t, out, "Status         = waiting for window 2026-01-03T01:00:00Z")

	notify := formatImageUpdates(&wire.ImageUpdates{JobID: "web", Tasks: []structs.ImageTaskStatus{{Group: "web", Task: "server",
		AutoUpdate: true, Mode: "notify", Pending: "sha256:b", WaitingFor: `not rolled: auto_update = "notify" reports it only`}}}, now)
	require.Contains(t, notify, "Auto Update    = notify (reported, never rolled)")
}
