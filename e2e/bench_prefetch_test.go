package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"text/tabwriter"
	"time"
)

// BenchmarkPrefetchGap measures, per node, how long a node answers nothing
// during a rolling update of the Docker web server, with prefetch (pull while
// the old container serves) and without (Nomad's kill-then-pull), for two
// image sizes over one throttled registry bandwidth. It prints a table of the
// per-node gap (p50 and max over every node and run) and the ratio of the
// medians. It is a benchmark, not a test: run it with
//
//	go test -run '^$' -bench PrefetchGap -benchtime 1x ./e2e/
func BenchmarkPrefetchGap(b *testing.B) {
	const (
		bandwidth = 1 << 20 // 1 MiB/s
		runs      = 2
	)
	sizes := []int64{4 << 20, 12 << 20}
	dc := newDockerCluster(b)
	base := dc.pushVersion(b, "base", 0)
	if code, out := dc.run(b, "-var", "image="+base); code != 0 {
		b.Fatalf("initial rollout failed:\n%s", out)
	}
	type row struct {
		size     int64
		prefetch bool
		gaps     []time.Duration
		rollouts []time.Duration
	}
	var rows []*row
	version := 0
	for i := 0; i < b.N; i++ {
		for _, size := range sizes {
			for _, prefetch := range []bool{true, false} {
				r := &row{size: size, prefetch: prefetch}
				for run := 0; run < runs; run++ {
					version++
					ref := dc.pushVersion(b, fmt.Sprintf("b%d", version), size+int64(version))
					gaps, took := dc.rollOut(b, ref, prefetch, bandwidth)
					for _, g := range gaps {
						r.gaps = append(r.gaps, g)
					}
					r.rollouts = append(r.rollouts, took)
				}
				rows = append(rows, r)
			}
		}
	}
	b.StopTimer()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nimage padding\tbandwidth\tprefetch\tnode gaps\tgap p50\tgap max\trollout p50\tp50 ratio (off/on)\n")
	p50 := func(ds []time.Duration) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for i, r := range rows {
		ratio := ""
		if !r.prefetch && i > 0 && rows[i-1].size == r.size && rows[i-1].prefetch {
			ratio = fmt.Sprintf("%.1fx", float64(p50(r.gaps))/float64(p50(rows[i-1].gaps)))
		}
		fmt.Fprintf(w, "%d MiB\t%d KiB/s\t%t\t%d\t%s\t%s\t%s\t%s\n", r.size>>20, bandwidth>>10, r.prefetch, len(r.gaps),
			p50(r.gaps).Round(10*time.Millisecond), slices.Max(r.gaps).Round(10*time.Millisecond),
			p50(r.rollouts).Round(100*time.Millisecond), ratio)
	}
	_ = w.Flush()
}
