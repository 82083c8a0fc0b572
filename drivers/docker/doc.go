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
// /secrets, the memory limit (see Memory below) and CPU shares (CPU). Each label in
// ports is published from NOMAD_IP_<l>:NOMAD_HOST_PORT_<l> on the host to
// NOMAD_PORT_<l> (the port's "to") in the container, TCP and UDP.
//
// Logs: a goroutine follows the container's log stream (with timestamps)
// and appends stdout and stderr to the task's rotated log files
// (drivers/logrotate, with the task config's LogLimits), recording the
// timestamp of the last line in <PrivateDir>/.drover-docker-logs.json (the
// task's private dir, outside the task dir). After a
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
// {type = bind|volume|tmpfs, source, target, readonly, options below},
// network_mode,
// force_pull, auth {username, password, email, server_address,
// identity_token}, image_pull_timeout (default 5m), pull_activity_timeout
// (default 2m) and prefetch (consumed by the task runner; accepted here),
// and the security keys privileged, cap_add, cap_drop, pid_mode, ipc_mode,
// uts_mode, userns_mode, devices [{host_path, container_path (default
// host_path), cgroup_permissions (default "rwm")}], security_opt and
// runtime, passed to the container as written once the plugin options
// allow them (see Security).
//
// The other container keys of Nomad's driver (keys.go, applied by
// runtime.go) go to the container config as written: hostname,
// dns_servers, dns_search_domains, dns_options, extra_hosts ("host:IP"),
// sysctl, ulimit { name = "soft[:hard]" }, shm_size (bytes), init,
// readonly_rootfs, interactive (stdin kept open), tty (the log copier then
// reads the one raw stream into the stdout log), pids_limit, oom_score_adj
// (0..1000: a task cannot shield itself from the OOM killer), group_add,
// storage_opt, healthchecks { disable } and logging { type, config } (the
// container's Docker log driver, by default Nomad's json-file with
// max-file = 2 and max-size = 2m; the output is still copied through the
// engine's log API for alloc logs and rotation, so type "none" and
// config "cache-disabled" = "true" for a driver other than json-file,
// local and journald are refused). Mount blocks take tmpfs_options { size,
// mode }, bind_options { propagation } and volume_options { no_copy,
// labels } (not driver_config). mounts is the list form of mount blocks,
// with the same checks and the same bind confinement (errors name
// mounts[i]). port_map { label = port } publishes the label's host port
// (NOMAD_IP_ and NOMAD_HOST_PORT_ of the group network) to that
// container port, TCP and UDP, and sets NOMAD_PORT_<label> in the
// container to it; a label in ports too takes port_map's port.
// Memory: the container's limit is memory_hard_limit (MB), else the
// task's memory_max, else its memory; with a hard limit the task's memory
// is the reservation, and a hard limit below it is refused at start.
// cpu_hard_limit adds a CFS quota of cpu / core MHz (from /proc/cpuinfo,
// as the client's fingerprint) of each cpu_cfs_period (default 100000µs).
// auth_soft_fail: credentials that cannot be read (a missing or broken
// docker config.json) give an anonymous pull instead of a failure, as in
// Nomad. load = "file.tar" (relative to the task dir, resolved with
// helper/pathguard and refused outside the allocation directory) runs
// docker load at every start instead of pulling, and runs the image's
// name:tag from it (a pinned digest is dropped); prepare checks the path
// and pulls nothing.
//
// Nomad's other keys are refused naming the key and why, as an
// *UnsupportedError ("ipv4_address is not supported by Drover's docker
// driver yet: ..."): advertise_ipv6_address, container_exists_attempts,
// ipv4_address, ipv6_address, isolation, network_aliases, volume_driver,
// and a mount's
// volume_options.driver_config. Keys Nomad does not have are "not a known
// option".
// pin_digest, auto_update, auto_update_interval, auto_update_soak,
// auto_update_min_age, auto_update_window and auto_update_approval are read
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
// defaults for image_pull_timeout and pull_activity_timeout, and the
// security options below.
//
// Security: a job submitter gets no more of the node than the operator's
// plugin options grant (Nomad's names and defaults, plus allow_devices):
//
//	volumes { enabled = false, selinuxlabel = "" }  bind sources outside the allocation directory, named volumes
//	allow_privileged = false                          privileged, and security_opt other than no-new-privileges
//	allow_caps = [audit_write, chown, dac_override, fowner, fsetid, kill, mknod,
//	              net_bind_service, setfcap, setgid, setpcap, setuid, sys_chroot]
//	allowed_modes { pid = ["private"], ipc = ["private"], uts = ["private"], userns = ["private"],
//	                network = ["default", "bridge", "host", "none"] }
//	allow_runtimes = ["runc", "nvidia"]
//	allow_devices = false                             devices
//
// cap_add entries must be in allow_caps ("all" allows any), and the driver
// drops every capability Docker grants by default that allow_caps does not
// list (net_raw, by default). A mode "" is "private" ("default" for the
// network) and "container:<name>" is "container". selinuxlabel ("z" or "Z")
// is applied to the driver's /alloc, /local and /secrets binds and to the
// volumes entries (passed as Binds; mount blocks are not relabelled).
//
// checkPolicy is the pure verdict on a task config; every refusal is a
// *PolicyError naming the field, the value, why, and the option:
//
//	privileged = true: privileged containers are not allowed on this client: set plugin "docker" { config { allow_privileged = true } }
//
// The task's host volume mounts (TaskConfig.Mounts, the operator's
// host_volume paths) are bind mounts whatever the volumes option says.
//
// With volumes disabled, every bind source (volumes entries and bind mount
// blocks, relative ones joined to the task dir) is resolved with
// helper/pathguard, following symlinks as the kernel does, and must lie in
// the allocation directory (the parent of the alloc dir and the task
// dirs); Docker is given the resolved path, so it follows no link a task
// planted. A named volume needs volumes enabled. PrepareTask checks all of
// it before anything is pulled (so a refused replacement fails before the
// previous allocation is stopped; the pull ahead of a wave, which has no
// task directories, checks all but the binds), and containerSpec checks it
// again at every start, before any container is created; a refusal is not
// recoverable. A bind source that does not exist is a recoverable start
// error (a sibling task may be creating it). The check and Docker's mount
// are two steps: a sibling task that swaps a checked directory of the
// allocation for a symlink between them (at the container's start) is not
// caught; the check is repeated at each start.
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
// above through an interface of its own (client/images.go). It imports
// drivers, helper/pathguard and the Docker client libraries.
// Clients run tasks through the drivers.Driver and drivers.Preparer
// interfaces.
package docker
