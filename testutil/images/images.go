package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Port is the port the server listens on inside the container.
const Port = 8080

// LabelKey and LabelValue mark every image (and, by convention, every
// container) that tests create, so that leftovers can be found and removed.
const (
	LabelKey   = "drover.test"
	LabelValue = "1"
)

//go:embed webserver/main.go
var serverSource []byte

// BuildOptions select the image to build.
type BuildOptions struct {
	// Version is served by GET / ("version <Version>\n"), via the VERSION
	// env var in the image config.
	Version string
	// PaddingBytes, when > 0, adds a layer holding that many random bytes.
	PaddingBytes int64
	// Seed determines the padding bytes; 0 derives a seed from Version.
	Seed int64
}

// epoch is the fixed timestamp of files and of the image config, for
// reproducible digests.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Build builds the image described by opts. The first call per process
// compiles the server (a few seconds); later calls reuse it.
func Build(opts BuildOptions) (v1.Image, error) {
	server, err := serverLayer()
	if err != nil {
		return nil, err
	}
	layers := []v1.Layer{server}
	if opts.PaddingBytes > 0 {
		seed := opts.Seed
		if seed == 0 {
			h := fnv.New64a()
			h.Write([]byte("version:" + opts.Version))
			seed = int64(h.Sum64())
		}
		pad, err := paddingLayer(opts.PaddingBytes, seed)
		if err != nil {
			return nil, err
		}
		layers = append(layers, pad)
	}

	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = []string{"/server"}
	cfg.Config.Env = []string{"VERSION=" + opts.Version, fmt.Sprintf("PORT=%d", Port)}
	cfg.Config.ExposedPorts = map[string]struct{}{fmt.Sprintf("%d/tcp", Port): {}}
	cfg.Config.Labels = map[string]string{LabelKey: LabelValue}
	return mutate.ConfigFile(img, cfg)
}

// Push writes img to ref ("HOST:PORT/repo:tag") over plain HTTP and returns
// the image's manifest digest ("sha256:...").
func Push(img v1.Image, ref string) (string, error) {
	return PushContext(context.Background(), img, ref)
}

// PushContext is Push with a context.
func PushContext(ctx context.Context, img v1.Image, ref string) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", ref, err)
	}
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// ServerBinary returns the compiled /server binary (built once per process).
func ServerBinary() ([]byte, error) {
	buildOnce.Do(func() { serverBin, buildErr = buildServer() })
	return serverBin, buildErr
}

var (
	buildOnce sync.Once
	serverBin []byte
	buildErr  error

	layerOnce sync.Once
	srvLayer  v1.Layer
	layerErr  error
)

func serverLayer() (v1.Layer, error) {
	layerOnce.Do(func() {
		bin, err := ServerBinary()
		if err != nil {
			layerErr = err
			return
		}
		srvLayer, layerErr = fileLayer("server", 0o755, int64(len(bin)), bytes.NewReader(bin))
	})
	return srvLayer, layerErr
}

// buildServer compiles the embedded webserver source in a scratch module in
// a temp dir, so it does not depend on the caller's working directory.
func buildServer() ([]byte, error) {
	dir, err := os.MkdirTemp("", "drover-testimage-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	gomod := "module drover.test/webserver\n\ngo 1.22\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), serverSource, 0o644); err != nil {
		return nil, err
	}
	goTool, err := findGo()
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "server")
	cmd := exec.Command(goTool, "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH,
		"GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build test server: %v\n%s", err, msg)
	}
	return os.ReadFile(out)
}

func findGo() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	for _, root := range []string{os.Getenv("GOROOT"), runtime.GOROOT()} {
		if root == "" {
			continue
		}
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("go tool not found on PATH or in GOROOT: needed to build the test image server")
}

// paddingLayer returns a layer holding /padding: size bytes from a ChaCha8
// stream seeded with seed (incompressible and reproducible).
func paddingLayer(size, seed int64) (v1.Layer, error) {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	copy(key[8:], "drover test image padding")
	return fileLayer("padding", 0o644, size, io.LimitReader(rand.NewChaCha8(key), size))
}

// fileLayer builds a gzipped one-file layer in memory, with fixed metadata
// and gzip settings so that equal content gives equal digests.
func fileLayer(name string, mode, size int64, content io.Reader) (v1.Layer, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     mode,
		Size:     size,
		ModTime:  epoch,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := io.Copy(tw, content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	})
}
