// Package docker is the "docker" task driver: it runs each task as a Docker
// container through the engine API (github.com/docker/docker/client, with
// API version negotiation, so a 20.10 engine works).
//
// Prefetch before kill: the driver is a drivers.Preparer. PrepareTask pulls
// the task's image (by digest when pinned as repo@sha256:...), unless it is
// present locally and force_pull is off, while the previous allocation keeps
// running. It reports drivers.PrepareProgress (bytes over all layers, at most
// one callback per 500ms plus a final one with BytesDone == BytesTotal), and
// cancels a pull that exceeds image_pull_timeout or makes no progress for
// pull_activity_timeout. A failed pull is a *PullError whose text names the
// image and the registry's error:
//
//	failed to pull image "127.0.0.1:5000/web:v2": manifest unknown
//	failed to pull image "127.0.0.1:5000/web:v2": no progress for 2m0s (pull_activity_timeout)
//
// StartTask pulls too when the image is missing (prefetch = false: the task
// runner prepares only after stopping the old allocation), then creates and
// starts the container "<task>-<alloc>" with labels drover.alloc_id,
// drover.task_name, drover.job_name and drover.namespace (plus the task's
// labels), the task environment (NOMAD_ALLOC_DIR, NOMAD_TASK_DIR and
// NOMAD_SECRETS_DIR rewritten to the container paths), bind mounts of the
// alloc dir at /alloc and of the task's local/ and secrets/ at /local and
// /secrets, the memory limit (MemoryMB) and CPU shares (CPU). Each label in
// ports is published from NOMAD_IP_<l>:NOMAD_HOST_PORT_<l> on the host to
// NOMAD_PORT_<l> (the port's "to") in the container, TCP and UDP.
//
// Logs: a goroutine follows the container's log stream (with timestamps)
// and appends stdout and stderr to the task's files, recording the
// timestamp of the last line in <TaskDir>/.drover-docker-logs.json. After a
// client restart RecoverTask re-attaches to the container by the ID in the
// handle's DriverState (the JSON of State: ContainerID, ImageID, Image) and
// resumes the stream after that line (best effort: lines written within a
// second of a crash may repeat).
//
// WaitTask reports the container's exit code, OOMKilled, and Signal when a
// signal the driver sent ended it (exit code 128+n). StopTask sends the
// signal (default SIGTERM), then SIGKILL after the timeout. DestroyTask
// removes the container.
//
// Task config: image (required), command, args, entrypoint, work_dir,
// ports, labels, volumes ("host:container[:ro]"; a relative host path is
// taken from the task dir, a bare name is a named volume), mount blocks
// {type = bind|volume|tmpfs, source, target, readonly}, network_mode,
// force_pull, auth {username, password, email, server_address,
// identity_token}, image_pull_timeout (default 5m), pull_activity_timeout
// (default 2m) and prefetch (consumed by the task runner; accepted here).
// pin_digest, auto_update, auto_update_interval and auto_update_soak are read
// by the server (digest pinning and the image watcher, nomad/imageresolve)
// and accepted and ignored here; a pinned image "name:tag@sha256:…" is
// pulled by its digest.
// Without an auth block, credentials for the image's registry are read from
// the docker config.json (plugin auth { config = PATH }, else
// $DOCKER_CONFIG/config.json or ~/.docker/config.json; credential helpers
// are not run).
//
// Plugin config: enabled (default true), endpoint (default: DOCKER_HOST or
// the local socket), image_delay (default 3m; also accepted as
// gc { image_delay }), gc { image = true, container }, auth { config },
// and defaults for image_pull_timeout and pull_activity_timeout.
//
// Image GC support for the client: ImageID, RemoveImage (never forced; an
// image used by a container gives an *ImageInUseError matching
// ErrImageInUse), ImageDelay and ImageGCEnabled.
//
// Fingerprint pings the daemon: healthy with driver.docker=1,
// driver.docker.version and driver.docker.os; an unreachable daemon gives
// Detected false, "Docker daemon not reachable: ...".
//
// Exec (drivers.Execer) runs a command in the task's container through the
// engine's exec API (create, attach, resize, inspect for the exit code), as
// the task's user; the engine cannot kill an exec, so a cancelled one only
// loses its attachment.
//
// Importers: drivers/builtin. The client's image GC uses the image methods
// above through an interface of its own (client/images.go).
// Clients run tasks through the drivers.Driver and drivers.Preparer
// interfaces.
package docker
