package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushRandom pushes a one-layer random image of size bytes to repo:tag and
// returns it with its layer digest.
func pushRandom(t *testing.T, r *Registry, repo, tag string, size int64) (v1.Image, string) {
	t.Helper()
	img, err := random.Image(size, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Ref(repo, tag), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push: %v", err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	d, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	return img, d.String()
}

func blobURL(r *Registry, repo, digest string) string {
	return fmt.Sprintf("http://%s/v2/%s/blobs/%s", r.Addr(), repo, digest)
}

func get(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func TestPushPullAndCounters(t *testing.T) {
	r := Start(t, Options{})
	img, layer := pushRandom(t, r, "team/web", "v1", 64<<10)
	if r.TotalBlobBytes() != 0 || r.BlobPulls(layer) != 0 {
		t.Fatalf("push counted as pull: bytes=%d pulls=%d", r.TotalBlobBytes(), r.BlobPulls(layer))
	}

	ref, _ := name.ParseReference(r.Ref("team/web", "v1"), name.Insecure)
	got, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	gotD, _ := got.Digest()
	if want != gotD {
		t.Fatalf("digest %s, want %s", gotD, want)
	}
	l, err := got.LayerByDigest(mustHash(t, layer))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}

	if got := r.BlobPulls(layer); got != 1 {
		t.Errorf("BlobPulls(layer) = %d, want 1", got)
	}
	hex := layer[len("sha256:"):]
	if got := r.BlobPulls(hex); got != 1 {
		t.Errorf("BlobPulls(bare hex) = %d, want 1", got)
	}
	if got := r.ManifestGets("team/web:v1"); got != 1 {
		t.Errorf("ManifestGets(team/web:v1) = %d, want 1", got)
	}
	if got := r.ManifestGets(r.Ref("team/web", "v1")); got != 1 {
		t.Errorf("ManifestGets(full ref) = %d, want 1", got)
	}
	if got := r.TotalBlobBytes(); got < n {
		t.Errorf("TotalBlobBytes = %d, want >= layer size %d", got, n)
	}

	// HEAD by digest is counted separately.
	dref, _ := name.ParseReference(r.Ref("team/web", want.String()), name.Insecure)
	if _, err := remote.Head(dref); err != nil {
		t.Fatal(err)
	}
	if got := r.ManifestHeads("team/web@" + want.String()); got != 1 {
		t.Errorf("ManifestHeads(by digest) = %d, want 1", got)
	}

	r.ResetCounters()
	if r.BlobPulls(layer) != 0 || r.ManifestGets("team/web:v1") != 0 || r.TotalBlobBytes() != 0 {
		t.Error("ResetCounters left counts behind")
	}
}

func mustHash(t *testing.T, s string) v1.Hash {
	t.Helper()
	h, err := v1.NewHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestThrottle(t *testing.T) {
	r := Start(t, Options{})
	_, layer := pushRandom(t, r, "big", "v1", 2<<20)

	start := time.Now()
	code, body, err := get(context.Background(), blobURL(r, "big", layer))
	if err != nil || code != 200 {
		t.Fatalf("unthrottled get: %d %v", code, err)
	}
	fast := time.Since(start)

	r.SetBandwidth(1 << 20) // 1 MiB/s
	if r.Bandwidth() != 1<<20 {
		t.Fatalf("Bandwidth() = %d", r.Bandwidth())
	}
	start = time.Now()
	code, body2, err := get(context.Background(), blobURL(r, "big", layer))
	if err != nil || code != 200 {
		t.Fatalf("throttled get: %d %v", code, err)
	}
	slow := time.Since(start)
	if len(body2) != len(body) {
		t.Fatalf("throttled body %d bytes, want %d", len(body2), len(body))
	}
	t.Logf("%d bytes: unlimited %v, at 1 MiB/s %v", len(body), fast, slow)
	if slow < 1500*time.Millisecond {
		t.Errorf("2 MiB at 1 MiB/s took %v, want >= 1.5s", slow)
	}
	if slow > 5*time.Second {
		t.Errorf("2 MiB at 1 MiB/s took %v, want about 2s", slow)
	}
	if got := r.TotalBlobBytes(); got != int64(2*len(body)) {
		t.Errorf("TotalBlobBytes = %d, want %d", got, 2*len(body))
	}
}

func TestThrottleIsShared(t *testing.T) {
	r := Start(t, Options{})
	_, a := pushRandom(t, r, "a", "v1", 512<<10)
	_, b := pushRandom(t, r, "b", "v1", 512<<10)
	r.SetBandwidth(1 << 20)
	start := time.Now()
	var wg sync.WaitGroup
	for _, u := range []string{blobURL(r, "a", a), blobURL(r, "b", b)} {
		wg.Go(func() {
			if code, _, err := get(context.Background(), u); err != nil || code != 200 {
				t.Errorf("get %s: %d %v", u, code, err)
			}
		})
	}
	wg.Wait()
	t.Logf("two concurrent 512 KiB pulls at 1 MiB/s: %v", time.Since(start))
	// 1 MiB in total through a 1 MiB/s link.
	if el := time.Since(start); el < 750*time.Millisecond {
		t.Errorf("two concurrent 512 KiB pulls at 1 MiB/s took %v, want >= 0.75s", el)
	}
}

// TestDownloadThrottleIsPerDownload: with a per-download limit, two
// concurrent downloads each get the whole rate; the shared limit still
// applies on top.
func TestDownloadThrottleIsPerDownload(t *testing.T) {
	r := Start(t, Options{})
	_, a := pushRandom(t, r, "a", "v1", 1<<20)
	_, b := pushRandom(t, r, "b", "v1", 1<<20)
	r.SetDownloadBandwidth(2 << 20)
	if r.DownloadBandwidth() != 2<<20 {
		t.Fatalf("DownloadBandwidth() = %d", r.DownloadBandwidth())
	}
	both := func() time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for _, u := range []string{blobURL(r, "a", a), blobURL(r, "b", b)} {
			wg.Go(func() {
				if code, body, err := get(context.Background(), u); err != nil || code != 200 || len(body) < 1<<20 {
					t.Errorf("get %s: %d, %d bytes, %v", u, code, len(body), err)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	// Each 1 MiB (plus tar overhead) at its own 2 MiB/s: about 0.5s.
	el := both()
	t.Logf("two concurrent 1 MiB pulls at 2 MiB/s each: %v", el)
	if el < 400*time.Millisecond || el > 900*time.Millisecond {
		t.Errorf("two concurrent 1 MiB pulls at 2 MiB/s each took %v, want about 0.5s", el)
	}
	// A shared 2 MiB/s on top: 2 MiB through one 2 MiB/s link, about 1s.
	r.SetBandwidth(2 << 20)
	el = both()
	t.Logf("same with a shared 2 MiB/s link: %v", el)
	if el < 900*time.Millisecond {
		t.Errorf("with the shared limit too, took %v, want >= 0.9s", el)
	}
	// Off again: fast.
	r.SetBandwidth(0)
	r.SetDownloadBandwidth(0)
	if el = both(); el > 700*time.Millisecond {
		t.Errorf("unlimited pulls took %v", el)
	}
}

func TestFailureInjection(t *testing.T) {
	r := Start(t, Options{})
	_, layer := pushRandom(t, r, "web", "v1", 4<<10)
	ctx := context.Background()

	r.FailBlobs(true)
	if code, _, err := get(ctx, blobURL(r, "web", layer)); err != nil || code != 500 {
		t.Fatalf("FailBlobs: got %d %v, want 500", code, err)
	}
	// Pushes keep working while blobs fail.
	pushRandom(t, r, "web", "v2", 4<<10)
	r.FailBlobs(false)
	if code, _, err := get(ctx, blobURL(r, "web", layer)); err != nil || code != 200 {
		t.Fatalf("after FailBlobs(false): got %d %v, want 200", code, err)
	}
	if got := r.BlobPulls(layer); got != 2 {
		t.Errorf("BlobPulls = %d, want 2 (failed requests count)", got)
	}

	// Raw requests: remote retries 5xx with backoff, which is slow.
	manURL := fmt.Sprintf("http://%s/v2/web/manifests/v1", r.Addr())
	r.FailManifests(true)
	if code, _, err := get(ctx, manURL); err != nil || code != 500 {
		t.Fatalf("FailManifests GET: %d %v, want 500", code, err)
	}
	resp, err := http.Head(manURL)
	if err != nil || resp.StatusCode != 500 {
		t.Fatalf("FailManifests HEAD: %v %v, want 500", resp, err)
	}
	resp.Body.Close()
	r.FailManifests(false)
	ref, _ := name.ParseReference(r.Ref("web", "v1"), name.Insecure)
	if _, err := remote.Image(ref); err != nil {
		t.Fatalf("after FailManifests(false): %v", err)
	}
	if got := r.ManifestGets("web:v1"); got != 2 {
		t.Errorf("ManifestGets = %d, want 2", got)
	}
}

func TestStall(t *testing.T) {
	r := Start(t, Options{})
	_, layer := pushRandom(t, r, "web", "v1", 256<<10)

	r.Stall(true)
	type result struct {
		code int
		n    int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		code, b, err := get(context.Background(), blobURL(r, "web", layer))
		res <- result{code, len(b), err}
	}()
	select {
	case got := <-res:
		t.Fatalf("stalled GET returned: %+v", got)
	case <-time.After(300 * time.Millisecond):
	}
	if r.TotalBlobBytes() != 0 || r.BlobPulls(layer) != 1 {
		t.Fatalf("while stalled: bytes=%d pulls=%d", r.TotalBlobBytes(), r.BlobPulls(layer))
	}
	r.Stall(false)
	select {
	case got := <-res:
		if got.err != nil || got.code != 200 || got.n < 256<<10 {
			t.Fatalf("released GET: %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GET still stuck after Stall(false)")
	}

	// A stalled request ends when the client gives up.
	r.Stall(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := get(ctx, blobURL(r, "web", layer)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled GET with deadline: %v", err)
	}
	// And Close releases what is left (a request stuck here would hang it).
	go func() { _, _, _ = get(context.Background(), blobURL(r, "web", layer)) }()
	time.Sleep(50 * time.Millisecond)
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a stalled request")
	}
}

func TestStallMidStream(t *testing.T) {
	r := Start(t, Options{})
	img, layer := pushRandom(t, r, "web", "v1", 1<<20)
	l, _ := img.LayerByDigest(mustHash(t, layer))
	size, _ := l.Size()
	r.SetBandwidth(2 << 20)

	req, _ := http.NewRequest(http.MethodGet, blobURL(r, "web", layer), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	r.Stall(true)
	time.Sleep(100 * time.Millisecond) // let the chunk in flight land
	before := r.TotalBlobBytes()
	time.Sleep(300 * time.Millisecond)
	if after := r.TotalBlobBytes(); after != before {
		t.Fatalf("bytes kept flowing while stalled: %d -> %d", before, after)
	}
	if before >= size {
		t.Fatalf("download finished before the stall (%d bytes)", before)
	}
	r.Stall(false)
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(64<<10 + len(rest)); got != size {
		t.Fatalf("read %d bytes, want %d", got, size)
	}
}

func TestConcurrentPulls(t *testing.T) {
	r := Start(t, Options{})
	img, _ := pushRandom(t, r, "web", "v1", 32<<10)
	want, _ := img.Digest()
	ref, _ := name.ParseReference(r.Ref("web", "v1"), name.Insecure)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Go(func() {
			got, err := remote.Image(ref)
			if err != nil {
				t.Error(err)
				return
			}
			if err := validate(got); err != nil {
				t.Error(err)
			}
			if d, _ := got.Digest(); d != want {
				t.Errorf("digest %s, want %s", d, want)
			}
		})
		if i == 8 {
			r.SetBandwidth(8 << 20)
		}
	}
	wg.Wait()
	if got := r.ManifestGets("web:v1"); got != 16 {
		t.Errorf("ManifestGets = %d, want 16", got)
	}
}

// validate reads every layer of img, which checks the digests.
func validate(img v1.Image) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func TestRef(t *testing.T) {
	r := Start(t, Options{})
	if got, want := r.Ref("a/b", "v1"), r.Addr()+"/a/b:v1"; got != want {
		t.Errorf("Ref = %q, want %q", got, want)
	}
	if got, want := r.Ref("a", "sha256:abc"), r.Addr()+"/a@sha256:abc"; got != want {
		t.Errorf("Ref(digest) = %q, want %q", got, want)
	}
}
