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
//
// Build is idempotent (a restored allocation builds again over what is
// there); Destroy removes the whole tree.
//
// Logs: drivers append a task's stdout and stderr to the ".0" files given
// to them (raw_exec's executor holds them open across client restarts).
// Known limit: the files are not rotated, so a task's log_config
// (max_files, max_file_size) is not enforced yet.
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
