// Package exec is the exec task driver: it runs a task's command (config
// command and args) isolated from the host with Linux namespaces, its task
// dir as its root and, where the host allows, a cgroup v2. It runs only on Linux, with the
// client agent running as root.
//
// # What a task gets
//
//   - Its own mount namespace, with every mount made private first, so
//     nothing mounted for the task is seen by the host or propagates to it.
//   - Its own PID namespace (pid_mode = "private", the default): PID 1 is
//     the task's init (this binary re-executed, "__drover_exec_init"), the
//     task is its child, and it sees only its own processes in /proc, a
//     procfs mounted in that namespace. The init reaps orphans, and when the
//     task exits it exits, taking every process left in the namespace with
//     it.
//   - Its own IPC namespace (ipc_mode = "private", the default) and UTS
//     namespace (the hostname is the node's, but the task cannot change the
//     host's).
//   - Its task dir as its root: the init bind-mounts the task dir on itself,
//     pivot_root()s into it and detaches the host's root, so no process in
//     the namespace, root or not, can climb back out (a plain chroot can be
//     escaped by a process that may chroot). Where pivot_root is impossible
//     (a host whose root is an initramfs) the task is chrooted instead, and
//     a line in its stderr log says so. The host paths of the plugin's chroot_env
//     (default /bin, /etc, /lib, /lib32, /lib64, /run/resolvconf, /sbin and
//     /usr, each when present on the host) are bind-mounted read-only,
//     nosuid and nodev at the same place; the shared alloc dir is at /alloc
//     (read-write), the task's host volume mounts (TaskConfig.Mounts) at
//     their destinations (read-only when the mount is; one overlapping
//     another bind fails the start), and the task dir's local/, secrets/
//     and tmp/ are /local, /secrets and /tmp. /dev is a small tmpfs with null, zero, full,
//     random, urandom and tty bound from the host, a tmpfs /dev/shm and the
//     fd, stdin, stdout and stderr links. NOMAD_TASK_DIR, NOMAD_ALLOC_DIR,
//     NOMAD_SECRETS_DIR (and any other variable or argument that is a path
//     under the task or alloc dir) are rewritten to these paths.
//   - The task's user, by default nobody; local/ and secrets/ are given to
//     that user. Its capability bounding set is cut to audit_write, chown,
//     dac_override, fowner, fsetid, kill, mknod, net_bind_service,
//     setfcap, setgid, setpcap, setuid and sys_chroot, so even a task run
//     as root cannot mount, remount its read-only binds, load modules or
//     trace the host's processes. A bare command name is looked up in /local, /,
//     /usr/local/bin, /usr/bin and /bin of the task's root; an absolute path
//     must exist in the root.
//   - When the host has a writable cgroup v2 hierarchy at /sys/fs/cgroup
//     with the memory and cpu controllers, its own cgroup
//     (drover.exec/<alloc>.<task>): memory.max from memory (or memory_max
//     when larger, with memory.low = memory), memory.swap.max = 0, and
//     cpu.weight from cpu (MHz shares mapped onto 1..10000). The task starts
//     straight into it (clone into cgroup); an OOM kill is reported in the
//     exit result. Without such a hierarchy tasks run without limits, and
//     the fingerprint says so (attribute driver.exec.cgroup_v2 = "false").
//
// # What it does not do
//
// No seccomp filter, no user namespace (root in the task is root on the
// host, with the capabilities above: it can, for instance, chown or mknod in
// the directories it can write, and under the chroot fallback it can escape
// with sys_chroot), no network namespace (tasks share the host
// network), no /sys, no per-task choice of capabilities (cap_add /
// cap_drop), no no_new_privs. Prefer the default user, nobody, for untrusted
// work. Artifacts and templates are not part of this driver.
//
// # Paths a task can redirect
//
// A task (as root, or through the alloc dir its group shares) can replace
// what it may write with symlinks that its next run, or a sibling's, would
// follow on the host. Every path the driver and its executor touch on the
// host is therefore checked after symlinks (helper/pathguard) before use:
// local/, secrets/ and tmp/ (created, chowned, chmodded) and every
// mountpoint (/proc, /dev, /alloc, the chroot_env targets) must stay inside
// the task dir, the log files inside the alloc dir; the executor's spec is
// written, and its exit record read, without following a symlink; the
// cleanup of mountpoints skips a path that no longer resolves to itself.
// A path that leads out fails the start with an error naming it (the task
// event shows it) and nothing on the host is created, written, chowned,
// chmodded or mounted over. The command is resolved the way the task will
// see it: a symlink to an absolute path leads into the task's root, not the
// host's.
//
// # How it runs
//
// Starting, waiting, stopping, signalling and recovering are the raw_exec
// driver's (drivers/rawexec.NewIsolated): an executor, a re-execution of
// this binary in its own session, supervises each task and records its
// exit, so a restarted client recovers it. Through a rawexec wrapper the
// executor starts the namespace init instead of the command; the init
// builds the root, reports readiness (or why it failed, which fails
// StartTask) and then the task's exit code and signal on a pipe. The task
// runs in the init's process group, so stop and signal reach it; a SIGKILL
// kills the init and with it the whole namespace. The executor creates the
// mountpoints in the task dir and the cgroup, and removes both when the
// task is gone (mountpoints only while empty, as they are on the host).
//
// # Alloc exec
//
// ExecTask runs a command inside a running task's isolation. The Go
// runtime cannot enter a mount namespace once it runs several threads, so
// util-linux does it: nsenter (on the host, /usr/bin/nsenter) targets the
// task's init (TaskPID of the raw_exec state), enters its mount, UTS, IPC
// and PID namespaces (those it does not share with the agent) and its root
// and working directory, then execs setpriv found in the task's root
// (/usr/bin/setpriv, /bin/setpriv, /usr/sbin or /sbin; the default
// chroot_env brings the host's), which takes the task's user and groups,
// clears the inheritable set, cuts the bounding set to the task's and
// execs the command, looked up in the task's root with the task's
// environment. nsenter starts in the task's cgroup (clone into cgroup), so
// the command is accounted and limited with the task. A command exec'd
// into a task run as root has the task's capabilities, no more: it cannot
// mount or remount the read-only binds. The command runs in a session of
// its own, on a pseudo-terminal when asked, and is killed with that
// session when the caller goes away. Without nsenter or setpriv, or when
// the task is only chrooted (its init's root is not the task dir), ExecTask
// answers drivers.ErrExecNotSupported with the reason; off Linux always.
//
// The fingerprint reports the driver detected and healthy only when the
// agent is root on Linux and a thread can really enter new mount, PID, IPC
// and UTS namespaces; otherwise it is undetected with the reason, and jobs
// using it are not placed on the node ("missing drivers").
//
// Task config: command (required), args, pid_mode and ipc_mode ("private"
// or "host"). Plugin config: chroot_env (host path = task path),
// default_pid_mode, default_ipc_mode; no_cgroups is accepted and ignored.
//
// Importers: drivers/builtin (registration). The binary's main, and TestMain
// of tests that start tasks, must call rawexec.MaybeRunExecutor, which also
// runs the namespace init.
package exec
