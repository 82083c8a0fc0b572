package chaos

import "testing"

// TestMarkRanges: every process's marks fit in connMarkMask, and two
// processes whose pids differ modulo 255 hand out no mark in common.
func TestMarkRanges(t *testing.T) {
	seen := map[uint32]int{}
	for pid := 1000; pid < 1000+255; pid++ {
		for n := uint32(1); n < marksPerNet; n++ {
			mark := (markBase(pid) + n) << 16
			if mark&^uint32(connMarkMask) != 0 {
				t.Fatalf("pid %d: mark %#x outside the mask %#x", pid, mark, connMarkMask)
			}
			if other, ok := seen[mark]; ok {
				t.Fatalf("pids %d and %d share mark %#x", other, pid, mark)
			}
			seen[mark] = pid
		}
	}
}
