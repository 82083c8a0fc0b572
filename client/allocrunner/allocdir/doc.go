// Package allocdir lays out an allocation's directories on the client:
//
//	<root>/<allocID>/
//	├── alloc/            shared by the group's tasks (NOMAD_ALLOC_DIR)
//	│   ├── logs/         <task>.stdout.0, <task>.stderr.0
//	│   ├── data/
//	│   └── tmp/
//	└── <task>/           the task's working directory
//	    ├── local/        NOMAD_TASK_DIR
//	    ├── secrets/      NOMAD_SECRETS_DIR
//	    └── tmp/
//	<root>/.private/<allocID>/<task>/   mode 0700: the task's private dir
//
// The private dir holds what the client and the driver keep about a task
// (raw_exec's executor spec and exit record): it lies outside the
// allocation's tree, so no task sees or changes it (an exec task is
// chrooted in its task dir; a task of another user cannot enter a 0700
// dir of root's) and `alloc fs`, which serves <root>/<allocID>, does not
// list it.
//
// Build is idempotent (a restored allocation builds again over what is
// there); Destroy removes the whole tree and the private dirs.
//
// Logs: drivers write a task's stdout and stderr through rotated files
// starting at the ".0" files given to them (drivers/logrotate).
//
// Ephemeral data (migrate.go): what ephemeral_disk sticky and migrate hand
// to a replacement, alloc/data and each task's local/. MoveEphemeral
// renames it from the previous allocation on the same node;
// WriteSnapshot and RestoreSnapshot carry it between nodes as a tar stream,
// restored atomically and refusing entries that would leave the allocation
// directory (ErrUnsafeArchive).
//
// Importers: client/allocrunner and its taskrunner, and client (which
// serves snapshots to a replacement on another node). It imports the
// standard library and helper/pathguard.
package allocdir
