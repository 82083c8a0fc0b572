package command

const systemGCHelp = `Usage: drover system gc [options]

  Initializes a garbage collection of jobs, evaluations, allocations,
  deployments and nodes: everything terminal that the collector's safety
  rules allow goes now, whatever the *_gc_threshold settings say.`

// systemGC implements `drover system gc`.
func systemGC(m *Meta, args []string) int {
	fs := m.FlagSet("system gc")
	if code, ok := m.parse(fs, args, systemGCHelp); !ok {
		return code
	}
	if len(fs.Args()) != 0 {
		return m.usageError("This command takes no arguments", systemGCHelp)
	}
	c, err := m.Client()
	if err != nil {
		m.errorf("Error initializing client: %v", err)
		return 1
	}
	if err := c.System().GarbageCollect(); err != nil {
		m.errorf("Error running system garbage-collection: %v", err)
		return 1
	}
	return 0
}
