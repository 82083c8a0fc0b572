// Package logrotate keeps a task's output stream (stdout or stderr) in
// numbered, size-bounded files, as Nomad does, and reads them back in order.
//
// A stream's files are <prefix>.0, <prefix>.1, ... in one directory (the
// allocation's alloc/logs, prefix "<task>.stdout"). Output goes to the file
// with the highest index until it holds Limits.MaxFileSize bytes; then the
// next index is started. At most Limits.MaxFiles files are kept, the file
// being written included: the oldest are deleted. A file is never renamed
// or truncated. A Writer opened again on an existing stream (a restarted
// task, a re-attached log copier) continues the highest index, or starts
// the next one when that file is full.
//
// A Reader reads the files oldest first from a Position (Seek: an offset
// from the start of the oldest file or from the end of the newest) and,
// read after read, follows the stream across rotations: at the end of a
// file it moves on once a newer one exists.
//
// Every file operation goes through an os.Root: on the directory given to
// OpenIn and NewReaderIn (the allocation's shared dir, which its tasks may
// write), else on the stream's own directory. A task that can write there
// cannot make the writer or a reader leave it: symlinks are followed only
// while they stay inside (a symlink at the file being continued that leads
// out fails Open, naming it), a file the writer starts replaces whatever
// was planted at its name, and only regular files count as the stream's.
//
// Importers: the drivers that write task output (drivers/rawexec's
// executor, so drivers/exec too; drivers/docker's log copier;
// drivers/mock), the client's log endpoints (client), and tests. It imports
// only the standard library.
package logrotate
