package network

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
)

// allocChain is a chain the bridge plugin makes for one attachment (its
// masquerade rules): CNI- and 24 hex digits of a hash of the network and
// the allocation; no other attachment jumps to it.
var allocChain = regexp.MustCompile(`-j (CNI-[0-9a-f]{24})$`)

// sweepPlan decides, from `iptables-save -t <table>` output, what
// iptables-restore --noflush input removes what is left of allocID: the
// rules whose comment names it (the plugins write `id: "<alloc ID>"`) and
// the per-attachment chains they jump to. "" when nothing is left.
func sweepPlan(table, saved, allocID string) string {
	tag := `id: \"` + allocID + `\"`
	var dels, chains []string
	seen := map[string]bool{}
	for _, line := range strings.Split(saved, "\n") {
		if !strings.HasPrefix(line, "-A ") || !strings.Contains(line, tag) {
			continue
		}
		dels = append(dels, "-D "+line[len("-A "):])
		if m := allocChain.FindStringSubmatch(line); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			chains = append(chains, m[1])
		}
	}
	if len(dels) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%s\n", table)
	for _, d := range dels {
		b.WriteString(d + "\n")
	}
	for _, c := range chains {
		fmt.Fprintf(&b, "-F %s\n-X %s\n", c, c)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}

// sweepRules removes the iptables rules CNI DEL left of allocID: the
// bridge plugin finds its masquerade rules through the namespace's
// interface, so a namespace lost before DEL leaves them.
func sweepRules(allocID string) error {
	for _, table := range []string{"nat", "filter"} {
		saved, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			return fmt.Errorf("network: iptables-save -t %s: %w", table, err)
		}
		plan := sweepPlan(table, string(saved), allocID)
		if plan == "" {
			continue
		}
		cmd := exec.Command("iptables-restore", "--noflush")
		cmd.Stdin = strings.NewReader(plan)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("network: removing the %s rules left of %s: %w: %s", table, allocID, err, strings.TrimSpace(stderr.String()))
		}
	}
	return nil
}
