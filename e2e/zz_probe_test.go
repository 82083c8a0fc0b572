package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestZZProbe(t *testing.T) {
	addr := os.Getenv("PROBE_ADDR")
	if addr == "" {
		t.Skip()
	}
	ctx := newBrowser(t, 1280, 900)
	for range 3 {
		run(t, ctx, 30*time.Second, chromedp.Navigate(addr+"/ui/jobs/fleet/rollout"))
		waitJS(t, ctx, 30*time.Second, `window.droverRollout && window.droverRollout.cells.length === 2000`)
		t.Logf("drawnAt %.0f live %s", evalJS[float64](t, ctx, `window.droverRollout.drawnAt`), evalJS[string](t, ctx, `window.droverRollout.live`))
		t.Logf("%s", evalJS[string](t, ctx, `JSON.stringify(performance.getEntriesByType('resource').map(e => [e.name.slice(-60), Math.round(e.startTime), Math.round(e.responseEnd), e.transferSize]))`))
	}
	time.Sleep(time.Duration(len(os.Getenv("PROBE_WAIT"))) * time.Second)
	t.Logf("marks %s", evalJS[string](t, ctx, `JSON.stringify(performance.getEntriesByType("navigation")[0])`))
	t.Logf("after: renders %v cellUpdates %v history %v", evalJS[float64](t, ctx, `window.droverRollout.renders`), evalJS[float64](t, ctx, `window.droverRollout.cellUpdates`), evalJS[[]string](t, ctx, `window.droverRollout.history`))
}
