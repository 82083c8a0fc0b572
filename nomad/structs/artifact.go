package structs

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
)

// Artifact getter modes (the artifact block's mode).
const (
	GetterModeAny  = "any"
	GetterModeFile = "file"
	GetterModeDir  = "dir"
)

// TaskArtifact is one `artifact` block of a task: a file, directory or
// archive the client fetches into the task directory before the task
// starts (client/allocrunner/taskrunner/getter). Source, destination,
// options and headers are interpolated with the task's environment at run
// time, as in Nomad.
type TaskArtifact struct {
	GetterSource string
	// GetterOptions are go-getter's query options: checksum =
	// "sha256:...", archive = false, ref (git), ...
	GetterOptions map[string]string
	// GetterHeaders are sent with http(s) requests.
	GetterHeaders map[string]string
	// GetterMode is "any" (the default), "file" or "dir".
	GetterMode     string
	GetterInsecure bool
	// RelativeDest is the destination relative to the task directory
	// (default "local/"); it may reach the shared alloc directory
	// ("../alloc/...") but nothing outside the allocation.
	RelativeDest string
	// Chown gives what was fetched to the task's user.
	Chown bool
}

// refusedGetterSchemes are the getters Drover clients do not have, with
// why; a source that names one is refused at registration.
var refusedGetterSchemes = map[string]string{
	"s3":  "S3 downloads need AWS credentials and Drover clients have none configured",
	"gcs": "GCS downloads need Google Cloud credentials and Drover clients have none configured",
	"hg":  "Drover clients have no Mercurial getter",
}

// validate returns the problems of one artifact block.
func (a *TaskArtifact) validate() []string {
	var p problems
	if a.GetterSource == "" {
		p.addf("source must be specified")
	}
	switch a.GetterMode {
	case "", GetterModeAny, GetterModeFile, GetterModeDir:
	default:
		p.addf("invalid artifact mode %q; must be one of: %s, %s, %s",
			a.GetterMode, GetterModeAny, GetterModeFile, GetterModeDir)
	}
	if ArtifactDestEscapes(a.RelativeDest) {
		p.addf("destination escapes allocation directory")
	}
	if msg := a.checksumProblem(); msg != "" {
		p.addf("%s", msg)
	}
	if scheme := GetterScheme(a.GetterSource); refusedGetterSchemes[scheme] != "" {
		p.addf("source %q: %s sources are refused: %s", a.GetterSource, scheme, refusedGetterSchemes[scheme])
	}
	return p
}

// ArtifactDestEscapes reports whether an artifact destination, relative
// to a task directory that sits in its allocation directory, leads out of
// the allocation directory. An absolute destination is taken relative to
// the task directory, as the client joins it.
func ArtifactDestEscapes(dest string) bool {
	const root = "/alloc"
	joined := filepath.Join(root, "task", dest)
	return joined != root && !strings.HasPrefix(joined, root+"/")
}

// checksumProblem checks options.checksum ("type:hex"); a value with an
// interpolation is checked when the client fetches.
func (a *TaskArtifact) checksumProblem() string {
	check, ok := a.GetterOptions["checksum"]
	if !ok || strings.Contains(check, "${") {
		return ""
	}
	check = strings.TrimSpace(check)
	if check == "" {
		return "checksum value cannot be empty"
	}
	typ, val, found := strings.Cut(check, ":")
	if !found || strings.Contains(val, ":") {
		return fmt.Sprintf("checksum must be given as %q; got %q", "type:value", check)
	}
	sum, err := hex.DecodeString(val)
	if err != nil {
		return fmt.Sprintf("invalid checksum: %v", err)
	}
	sizes := map[string]int{"md5": md5.Size, "sha1": sha1.Size, "sha256": sha256.Size, "sha512": sha512.Size}
	size, known := sizes[typ]
	if !known {
		return fmt.Sprintf("unsupported checksum type: %s", typ)
	}
	if len(sum) != size {
		return fmt.Sprintf("invalid %s checksum: %v", typ, val)
	}
	return ""
}

// GetterScheme is the getter an artifact source names as far as it can
// be told before interpolation: a forced getter ("git::https://..."), a
// URL scheme, or the well-known hosts that go-getter's detectors turn into
// s3, gcs or git sources. "" means none could be told.
func GetterScheme(src string) string {
	if i := strings.Index(src, "::"); i > 0 && !strings.ContainsAny(src[:i], "/:.") {
		return strings.ToLower(src[:i])
	}
	if i := strings.Index(src, "://"); i > 0 && !strings.ContainsAny(src[:i], "/.") {
		return strings.ToLower(src[:i])
	}
	// No scheme: go-getter's detectors look at the host.
	host := strings.ToLower(src)
	name, _, _ := strings.Cut(host, "/")
	switch {
	case strings.HasSuffix(name, ".amazonaws.com") && (strings.HasPrefix(name, "s3") || strings.Contains(name, ".s3")):
		return "s3"
	case strings.HasPrefix(host, "storage.googleapis.com/") || strings.HasPrefix(host, "www.googleapis.com/storage/"):
		return "gcs"
	}
	return ""
}
