package getter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	gg "github.com/hashicorp/go-getter"

	"github.com/drover-project/drover/helper/pathguard"
)

// Request is one artifact to fetch, already interpolated.
type Request struct {
	Source   string
	Options  map[string]string // go-getter query options (checksum, archive, ref, ...)
	Headers  map[string]string // http(s) request headers
	Mode     string            // "any" ("" too), "file" or "dir"
	Insecure bool              // skip TLS verification
	// Dest is relative to TaskDir (an absolute one too, as in Nomad).
	Dest string
	// AllocDir is the allocation directory, TaskDir the task's (inside it).
	AllocDir, TaskDir string
	// Owner, when set, is given everything fetched (chown = true).
	Owner *Owner
}

// Owner is a uid and gid on the host.
type Owner struct{ UID, GID int }

// ErrDestEscapes is wrapped by Fetch's error for a destination that leads
// out of the allocation directory.
var ErrDestEscapes = errors.New("artifact destination path escapes the alloc directory")

// umask strips setuid, setgid and sticky bits from what is written.
const umask = os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// Fetch downloads r into its destination with cfg's limits (nil: the
// defaults). The error says what failed; ctx ends the download.
func Fetch(ctx context.Context, cfg *Config, r Request) error {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	dest, err := destination(r)
	if err != nil {
		return err
	}
	src, err := sourceURL(r.Source, r.Options)
	if err != nil {
		return err
	}
	mode := gg.ClientModeAny
	switch r.Mode {
	case "file":
		mode = gg.ClientModeFile
	case "dir":
		mode = gg.ClientModeDir
	}
	c := &gg.Client{
		Ctx:             ctx,
		Src:             src,
		Dst:             dest,
		Pwd:             r.TaskDir,
		Mode:            mode,
		Umask:           umask,
		Getters:         getters(cfg, r),
		Decompressors:   gg.LimitedDecompressors(cfg.DecompressionFileCountLimit, cfg.DecompressionSizeLimit),
		Insecure:        r.Insecure,
		DisableSymlinks: true,
	}
	if err := c.Get(); err != nil {
		return fmt.Errorf("getter: %w", err)
	}
	if err := checkLinks(r.AllocDir, dest); err != nil {
		return err
	}
	if r.Owner != nil {
		return chownTree(dest, *r.Owner)
	}
	return nil
}

// destination resolves r.Dest from the task directory, symlinks followed,
// and refuses one that leaves the allocation directory. An absolute
// destination inside the allocation directory (an interpolated
// ${NOMAD_ALLOC_DIR}/... of a task on the host's file system) is taken as
// it is; any other absolute one is taken from the task directory.
func destination(r Request) (string, error) {
	if filepath.IsAbs(r.Dest) && pathguard.Inside(r.AllocDir, filepath.Clean(r.Dest)) {
		dest, err := pathguard.Within(r.AllocDir, r.Dest)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %w", ErrDestEscapes, r.Dest, err)
		}
		return dest, nil
	}
	taskRel, err := filepath.Rel(r.AllocDir, r.TaskDir)
	if err != nil || taskRel == ".." || strings.HasPrefix(taskRel, "../") {
		return "", fmt.Errorf("getter: task directory %s is not inside %s", r.TaskDir, r.AllocDir)
	}
	rel := taskRel
	if d := strings.TrimLeft(r.Dest, "/"); d != "" {
		rel = taskRel + "/" + d
	}
	dest, err := pathguard.Within(r.AllocDir, rel)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrDestEscapes, r.Dest, err)
	}
	return dest, nil
}

// sourceURL adds the options to the source's query, where go-getter reads
// them; a forced getter prefix ("git::") and scp-like git sources
// ("git@host:org/repo") are kept as written.
func sourceURL(src string, opts map[string]string) (string, error) {
	if len(opts) == 0 {
		return src, nil
	}
	force, rest := "", src
	if i := strings.Index(src, "::"); i > 0 && !strings.ContainsAny(src[:i], "/:.") {
		force, rest = src[:i+2], src[i+2:]
	}
	q := url.Values{}
	for k, v := range opts {
		q.Set(k, v)
	}
	u, err := url.Parse(rest)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		// Not a URL go-getter's detectors have seen yet: append the query.
		sep := "?"
		if strings.Contains(rest, "?") {
			sep = "&"
		}
		return force + rest + sep + q.Encode(), nil
	}
	uq := u.Query()
	for k, v := range q {
		uq[k] = v
	}
	u.RawQuery = uq.Encode()
	return force + u.String(), nil
}

// getters builds this fetch's getters (go-getter keeps the client in each,
// so they are not shared between fetches).
func getters(cfg *Config, r Request) map[string]gg.Getter {
	hdr := http.Header{}
	for k, v := range r.Headers {
		hdr.Set(k, v)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if r.Insecure {
		base.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the artifact's insecure = true
	}
	httpG := &gg.HttpGetter{
		Client:                &http.Client{Transport: &limitTransport{base: base, max: cfg.HTTPMaxSize}},
		Header:                hdr,
		DoNotCheckHeadFirst:   true,
		ReadTimeout:           cfg.HTTPReadTimeout,
		XTerraformGetDisabled: true,
	}
	fresh := &freshFileGetter{httpG}
	out := map[string]gg.Getter{
		"http":  fresh,
		"https": fresh,
		"file":  &fileGetter{FileGetter: &gg.FileGetter{Copy: true}, allocDir: r.AllocDir, anywhere: cfg.DisableFilesystemIsolation},
	}
	if _, err := exec.LookPath("git"); err == nil {
		out["git"] = &gg.GitGetter{Timeout: cfg.GitTimeout}
	}
	return out
}

// freshFileGetter removes a file left by an earlier attempt before
// downloading it again: go-getter writes over it without truncating.
type freshFileGetter struct{ *gg.HttpGetter }

func (g *freshFileGetter) GetFile(dst string, u *url.URL) error {
	if fi, err := os.Lstat(dst); err == nil && !fi.IsDir() {
		if err := os.Remove(dst); err != nil {
			return err
		}
	}
	return g.HttpGetter.GetFile(dst, u)
}

// fileGetter copies local files; unless anywhere, only from inside the
// allocation directory.
type fileGetter struct {
	*gg.FileGetter
	allocDir string
	anywhere bool
}

func (g *fileGetter) Get(dst string, u *url.URL) error {
	if err := g.check(u); err != nil {
		return err
	}
	return g.FileGetter.Get(dst, u)
}

func (g *fileGetter) GetFile(dst string, u *url.URL) error {
	if err := g.check(u); err != nil {
		return err
	}
	return g.FileGetter.GetFile(dst, u)
}

func (g *fileGetter) check(u *url.URL) error {
	if g.anywhere {
		return nil
	}
	p := u.Path
	if u.RawPath != "" {
		p = u.RawPath
	}
	if _, err := pathguard.Within(g.allocDir, p); err != nil {
		return fmt.Errorf("file source %s is outside the allocation directory (the client's artifact { disable_filesystem_isolation = false }): %w", p, err)
	}
	return nil
}

// checkLinks refuses a fetch that left a symlink leading out of the
// allocation directory under dest.
func checkLinks(allocDir, dest string) error {
	return filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if _, err := pathguard.Within(allocDir, p); err != nil {
			return fmt.Errorf("artifact contains a symlink that escapes the alloc directory: %s: %w", p, err)
		}
		return nil
	})
}

// chownTree gives dest and everything below it to o, without following
// symlinks.
func chownTree(dest string, o Owner) error {
	return filepath.WalkDir(dest, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, o.UID, o.GID); err != nil {
			return fmt.Errorf("chown artifact: %w", err)
		}
		return nil
	})
}
