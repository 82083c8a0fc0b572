package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

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

// probeEnv names the address a probe process (this test binary, started
// by TestDropConnsCutsAnOpenConnection) dials; TestMain runs runProbe
// instead of the tests when it is set.
const probeEnv = "DROVER_CHAOS_NET_PROBE"

// runProbe dials addr, says "hello", and copies every line it receives to
// stdout until the connection ends.
func runProbe(addr string) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(2)
	}
	fmt.Fprintln(conn, "hello")
	_, _ = io.Copy(os.Stdout, conn)
	os.Exit(0)
}

// TestDropConnsCutsAnOpenConnection: a member (the probe, in its own
// cgroup, its connections marked) opens a connection to a peer; once the
// member's packets to the peer's address are dropped, the peer's answers
// on that connection still reach it (they go to 127.0.0.1), and only
// DropConns stops them. After Heal the held-back answer arrives (TCP
// resends it), so the rules, not a dead connection, kept it out.
func TestDropConnsCutsAnOpenConnection(t *testing.T) {
	n := NewNet(t)
	host := fmt.Sprintf("127.0.0.%d", envInt("DROVER_CHAOS_HOST", 11)+38)
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	attr, cg, err := n.Cgroup("probe")
	if err != nil {
		t.Fatal(err)
	}
	mark, err := n.MarkConns(cg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), probeEnv+"="+ln.Addr().String())
	cmd.SysProcAttr = attr
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if hello, err := bufio.NewReader(conn).ReadString('\n'); err != nil || strings.TrimSpace(hello) != "hello" {
		t.Fatalf("probe said %q (%v)", hello, err)
	}
	// expect sends word on the connection and waits up to wait for the
	// probe to print it (or not).
	expect := func(word string, arrives bool, wait time.Duration) {
		t.Helper()
		if _, err := fmt.Fprintln(conn, word); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-lines:
			if !arrives {
				t.Fatalf("%q reached the probe through the cut", got)
			}
			if got != word {
				t.Fatalf("probe got %q, want %q", got, word)
			}
		case <-time.After(wait):
			if arrives {
				t.Fatalf("%q did not reach the probe within %v", word, wait)
			}
		}
	}
	expect("open", true, 10*time.Second)

	if err := n.Drop(cg, host); err != nil {
		t.Fatal(err)
	}
	expect("answer", true, 10*time.Second) // the premise: an address rule leaves the answers alone

	if err := n.DropConns(mark); err != nil {
		t.Fatal(err)
	}
	expect("cut", false, 3*time.Second)

	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-lines:
		if got != "cut" {
			t.Fatalf("after the heal the probe got %q, want the held-back %q", got, "cut")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held-back answer did not arrive within 30 s of the heal")
	}
}
