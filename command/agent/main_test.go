package agent

import (
	"os"
	"testing"

	"github.com/drover-project/drover/drivers/rawexec"
)

// TestMain lets the test binary serve as raw_exec's executor, so dev agents
// in these tests run raw_exec tasks.
func TestMain(m *testing.M) {
	rawexec.MaybeRunExecutor()
	os.Exit(m.Run())
}
