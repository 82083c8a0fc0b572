package chaos

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
)

// A leader paused (SIGSTOP) while the others elect a new leader and
// acknowledge a write must not, once resumed, answer a default read that
// was waiting in its socket with the value from before the write: it no
// longer leads, whatever it believes until its lease check runs. (The
// chaos suite found this under pause-leader: a default read through the
// resumed old leader returned a value older than an acknowledged CAS.)
func TestResumedLeaderAnswersNoStaleDefaultRead(t *testing.T) {
	c := StartCluster(t, droverBin, 3, int(envInt("DROVER_CHAOS_HOST", 11))+5)
	for round := 0; round < 5; round++ {
		old, err := c.WaitLeader(90 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("chaos/paused-%d", round)
		if _, _, err := c.Servers[old].API.Variables().Update(&api.Variable{Path: key, Items: api.VariableItems{"v": "before"}}, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Servers[old].Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				_ = c.Servers[old].Signal(syscall.SIGCONT)
			}
		}
		t.Cleanup(resume)

		// The other two elect a leader and acknowledge a new value.
		next := -1
		deadline := time.Now().Add(90 * time.Second)
		for next < 0 {
			for _, s := range c.Servers {
				if s.Index == old {
					continue
				}
				if _, _, err := s.API.Variables().Update(&api.Variable{Path: key, Items: api.VariableItems{"v": "after"}}, nil); err == nil {
					next = s.Index
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no write acknowledged while s%d was paused%s", old, c.Tails(30))
			}
			time.Sleep(100 * time.Millisecond)
		}

		// A default read sent to the paused old leader waits in its socket.
		type answer struct {
			v   *api.Variable
			err error
		}
		got := make(chan answer, 1)
		go func() {
			v, _, err := c.Servers[old].API.Variables().Read(key, nil)
			got <- answer{v, err}
		}()
		time.Sleep(500 * time.Millisecond) // the request reaches the stopped process's socket; nothing to wait on
		resume()
		a := <-got
		switch {
		case a.err != nil:
			t.Logf("round %d: the resumed s%d refused the read: %v", round, old, a.err)
		case a.v.Items["v"] == "after":
			t.Logf("round %d: the resumed s%d answered the new value", round, old)
		default:
			t.Fatalf("round %d: the resumed old leader s%d answered a default read with %q after s%d acknowledged \"after\"", round, old, a.v.Items["v"], next)
		}
	}
}
