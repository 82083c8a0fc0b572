// Package getter fetches a task's artifacts (the jobspec's artifact
// blocks) into its task directory with go-getter, under the client's
// artifact {} settings (Config): http_read_timeout and http_max_size for
// http(s), git_timeout for git, decompression_limit_size and
// decompression_limit_file_count for archives.
//
// Getters: http, https, git (when the git binary is on the client's PATH)
// and file. s3, gcs and hg are not offered (registration refuses them;
// a source that only turns into one after interpolation fails here with
// "download not supported for scheme").
//
// Guards, each failing the fetch with an error naming what was refused:
//   - the destination, symlinks followed, must stay inside the allocation
//     directory (helper/pathguard);
//   - go-getter's DisableSymlinks is on and its archive guards refuse
//     entries with "..";
//   - after the fetch, no symlink under the destination may lead out of
//     the allocation directory;
//   - an http(s) response larger than http_max_size fails, naming the
//     limit, instead of being cut short;
//   - unless disable_filesystem_isolation is set, file sources must lie
//     inside the allocation directory (the task's own files), as the
//     sandbox allows in Nomad.
//
// Importers: client/allocrunner/taskrunner (its artifacts hook); client,
// client/allocrunner and command/agent for Config. It imports go-getter,
// helper/pathguard and the standard library.
package getter
