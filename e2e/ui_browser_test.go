package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// Browser helpers for the web UI tests: a headless Chromium driven through
// the DevTools protocol (chromedp).

// chromiumPath finds a Chromium binary: $DROVER_CHROMIUM, else Debian's
// chromium (make ui-deps installs it), else other common names.
func chromiumPath() string {
	if p := os.Getenv("DROVER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium with a window of w×h CSS pixels
// and returns a context whose actions run in its one tab. Without Chromium
// the test is skipped, loudly.
func newBrowser(t *testing.T, w, h int) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("SKIPPED: no Chromium on this machine; `make ui-deps` installs Debian's chromium (apt-get install -y chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // tests run as root
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(w, h),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// Page errors and console errors go to the test log.
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf), chromedp.WithListener(func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			t.Logf("browser exception: %s (%s:%d)", msg, d.URL, d.LineNumber+1)
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				t.Logf("browser console %s: %s", ev.Type, strings.Join(parts, " "))
			}
		}
	}))
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx), "start Chromium at %s", path)
	return ctx
}

// run runs browser actions with a deadline.
func run(t *testing.T, ctx context.Context, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	require.NoError(t, chromedp.Do(c, actions...))
}

// waitJS waits until the JavaScript expression is truthy in the page.
func waitJS(t *testing.T, ctx context.Context, timeout time.Duration, expr string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := chromedp.Run(c, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(0)))
	if err != nil {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({status: document.getElementById('dep-status')?.textContent,
			rollout: window.droverRollout && {deployment: window.droverRollout.deployment, cells: window.droverRollout.cells},
			flash: document.getElementById('flash')?.textContent, busy: [...document.querySelectorAll('button:disabled')].map(b => b.id)})`))
		t.Fatalf("page never satisfied %s: %v\npage state: %s", expr, err, state)
	}
}

// screenshot saves the viewport as a PNG under docs/screenshots/.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(c, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	// make screenshots writes the README's pictures (docs/screenshots);
	// other runs leave the tree alone.
	dir := os.Getenv("DROVER_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "bin", "screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot %s (%d KiB)", path, len(png)/1024)
}

func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := chromedp.Run(c, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return out
}
