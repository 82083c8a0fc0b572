package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const jobDispatchHelp = `Usage: drover job dispatch [options] <parameterized job> [input source]

  Dispatch creates an instance of a parameterized job. A data payload to the
  dispatched instance can be provided via stdin by using "-" or by specifying
  a path to a file. Metadata can be supplied by using the meta flag one or
  more times.

  The payload has a size limit of 16384 bytes (16KiB).

  Upon successful creation, the dispatched job ID will be printed and the
  triggered evaluation will be monitored. This can be disabled by supplying
  the detach flag.

Dispatch Options:

  -meta <key>=<value>
    Meta takes a key/value pair separated by "=". The metadata key will be
    merged into the job's metadata. The job may define a default value for
    the key which is overridden when dispatching. The flag can be provided
    more than once to inject multiple metadata key/value pairs.

  -id-prefix-template <prefix>
    Optional prefix template for the dispatched job ID.

  -idempotency-token <token>
    Optional identifier used to prevent more than one instance of the job
    from being dispatched while the previous one is running.

  -priority <priority>
    Optional priority overriding the priority of the parameterized job.

  -detach
    Return immediately instead of entering monitor mode. After job dispatch,
    the evaluation ID will be printed to the screen.

  -verbose
    Display full information.`

// metaFlags collects repeated -meta key=value flags.
type metaFlags map[string]string

func (f metaFlags) String() string { return "" }

func (f metaFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("invalid key/value pair %q: expected key=value", v)
	}
	f[k] = val
	return nil
}

// jobDispatch implements `drover job dispatch`.
func jobDispatch(m *Meta, args []string) int {
	fs := m.FlagSet("job dispatch")
	meta := metaFlags{}
	var detach, verbose bool
	var token, prefix string
	var priority int
	fs.Var(meta, "meta", "")
	fs.StringVar(&token, "idempotency-token", "", "")
	fs.StringVar(&prefix, "id-prefix-template", "", "")
	fs.IntVar(&priority, "priority", 0, "")
	fs.BoolVar(&detach, "detach", false, "")
	fs.BoolVar(&verbose, "verbose", false, "")
	if code, ok := m.parse(fs, args, jobDispatchHelp); !ok {
		return code
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		return m.usageError("This command takes one or two arguments: <parameterized job> [input source]", jobDispatchHelp)
	}
	var payload []byte
	if fs.NArg() == 2 {
		var err error
		if payload, err = readPayload(m, fs.Arg(1)); err != nil {
			m.errorf("Error reading input data: %v", err)
			return 1
		}
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	ns := jobStubNamespace(stub)
	resp, _, err := c.Jobs().DispatchOpts(&api.DispatchOptions{
		JobID: stub.ID, Meta: meta, Payload: payload, IdPrefixTemplate: prefix, Priority: priority,
	}, &api.WriteOptions{Namespace: ns, IdempotencyToken: token})
	if err != nil {
		m.errorf("Failed to dispatch job: %s", err)
		return 1
	}
	m.outf("%s", formatKV([]string{"Dispatched Job ID|" + resp.DispatchedJobID, "Evaluation ID|" + resp.EvalID}))
	if detach || resp.EvalID == "" {
		return 0
	}
	m.outf("")
	return followEval(m, c, ns, resp.EvalID, false, verbose)
}

// readPayload reads the payload from path, or stdin for "-".
func readPayload(m *Meta, path string) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(m.Stdin)
	}
	return os.ReadFile(path)
}
