package e2e

import (
	"fmt"
	"os"
	"testing"
	"text/tabwriter"
	"time"
)

// BenchmarkPrefetchAhead measures the total time of a rollout of one new
// image over four Docker clients in waves of one through a registry
// throttled to 1 MiB/s, with ahead-of-wave prefetch (prefetch_parallel 4)
// and without (prefetch_parallel 0), and prints a table with the ratio.
// It is a benchmark, not a test:
//
//	make bench-prefetch-ahead
//
// The clients of one machine share one Docker engine, which joins
// concurrent pulls of an image and keeps what one client pulled for the
// others: without ahead-of-wave prefetch, too, only the first wave pays the
// pull here. The table therefore measures the cost of the mechanism on a
// shared engine, not the saving on a fleet with one engine per node.
func BenchmarkPrefetchAhead(b *testing.B) {
	const (
		nodes     = 4
		padding   = 8 << 20
		bandwidth = 1 << 20
	)
	dc := newAheadCluster(b, nodes)
	base := dc.pushVersion(b, "base", 0)
	if code, out := dc.run(b, "-var", "image="+base); code != 0 {
		b.Fatalf("initial rollout failed:\n%s", out)
	}
	type row struct {
		parallel int
		took     time.Duration
		stats    map[string]int
	}
	var rows []row
	version := 0
	for i := 0; i < b.N; i++ {
		for _, parallel := range []int{4, 0} {
			version++
			ref := dc.pushVersion(b, fmt.Sprintf("a%d", version), padding+int64(version))
			before := dc.aheadStats(b)
			dc.reg.SetBandwidth(bandwidth)
			start := time.Now()
			code, out := dc.run(b, "-var", "image="+ref, "-var", fmt.Sprintf("parallel=%d", parallel))
			took := time.Since(start)
			dc.reg.SetBandwidth(0)
			if code != 0 {
				b.Fatalf("rollout failed:\n%s", out)
			}
			after := dc.aheadStats(b)
			for k := range after {
				after[k] -= before[k]
			}
			rows = append(rows, row{parallel: parallel, took: took, stats: after})
		}
	}
	b.StopTimer()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nnodes\timage padding\tbandwidth\tprefetch_parallel\tpulls ahead (started/finished)\trollout\tratio (off/on)\n")
	for i, r := range rows {
		ratio := ""
		if r.parallel == 0 && i > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(r.took)/float64(rows[i-1].took))
		}
		fmt.Fprintf(w, "%d\t%d MiB\t%d KiB/s\t%d\t%d/%d\t%s\t%s\n", nodes, padding>>20, bandwidth>>10, r.parallel,
			r.stats["started"], r.stats["finished"], r.took.Round(100*time.Millisecond), ratio)
	}
	_ = w.Flush()
}
