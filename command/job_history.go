package command

import (
	"fmt"
	"strings"

	"github.com/hashicorp/nomad/api"
)

const jobHistoryHelp = `Usage: drover job history [options] <job>

  History is used to display the known versions of a particular job, newest
  first. The command can display the diff between job versions and can be
  useful for understanding the changes that occurred to the job as well as
  deciding job versions to revert to.

History Options:

  -p
    Display the difference between each job and its predecessor.

  -full
    Display the full job definition for each version.

  -version <job version>
    Display only the history for the given job version.

  -json
    Output the job versions in a JSON format.`

const jobInspectHelp = `Usage: drover job inspect [options] <job>
Alias: drover inspect

  Inspect is used to see the specification of a submitted job, printed as
  {"Job": ...} JSON that "drover job run -json" accepts back.

Inspect Options:

  -version <job version>
    Display the job at the given job version.

  -json
    Output the job in its JSON format (the default).`

// jobHistory implements `drover job history`.
func jobHistory(m *Meta, args []string) int {
	fs := m.FlagSet("job history")
	var diffs, full, jsonOut bool
	var version int64
	fs.BoolVar(&diffs, "p", false, "")
	fs.BoolVar(&full, "full", false, "")
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.Int64Var(&version, "version", -1, "")
	if code, ok := m.parse(fs, args, jobHistoryHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <job>", jobHistoryHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	versions, jobDiffs, _, err := c.Jobs().Versions(stub.ID, diffs, jobQuery(stub))
	if err != nil {
		m.errorf("Error retrieving job versions: %s", err)
		return 1
	}
	if version >= 0 {
		i := findVersion(versions, uint64(version))
		if i < 0 {
			m.errorf("No job with version %d found", version)
			return 1
		}
		versions, jobDiffs = versions[i:i+1], sliceDiff(jobDiffs, i)
	}
	if jsonOut {
		return m.printJSON(versions)
	}
	var blocks []string
	for i, v := range versions {
		var d *api.JobDiff
		if diffs && i < len(jobDiffs) {
			d = jobDiffs[i]
		}
		blocks = append(blocks, formatJobVersion(v, d, full))
	}
	m.outf("%s", strings.Join(blocks, "\n\n"))
	return 0
}

func findVersion(versions []*api.Job, v uint64) int {
	for i, j := range versions {
		if j.Version != nil && *j.Version == v {
			return i
		}
	}
	return -1
}

func sliceDiff(diffs []*api.JobDiff, i int) []*api.JobDiff {
	if i < len(diffs) {
		return diffs[i : i+1]
	}
	return nil
}

// formatJobVersion renders one version of a job, with its diff against the
// previous version when d is not nil, or its full JSON when full.
func formatJobVersion(j *api.Job, d *api.JobDiff, full bool) string {
	var version uint64
	if j.Version != nil {
		version = *j.Version
	}
	rows := []string{
		fmt.Sprintf("Version|%d", version),
		fmt.Sprintf("Stable|%t", j.Stable != nil && *j.Stable),
		"Submit Date|" + formatUnixNano(derefInt64(j.SubmitTime)),
	}
	if j.VersionTag != nil {
		rows = append(rows, "Tag Name|"+j.VersionTag.Name)
		if j.VersionTag.Description != "" {
			rows = append(rows, "Tag Description|"+j.VersionTag.Description)
		}
	}
	if d != nil && d.Type != diffNone {
		rows = append(rows, "Diff|")
	}
	out := formatKV(rows)
	if d != nil && d.Type != diffNone {
		out += "\n" + formatJobDiff(d, nil, false)
	}
	if full {
		if s, err := prettyJSON(j); err == nil {
			out += "\n" + s
		}
	}
	return out
}

// jobInspect implements `drover job inspect`.
func jobInspect(m *Meta, args []string) int {
	fs := m.FlagSet("job inspect")
	var jsonOut bool
	var version int64
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.Int64Var(&version, "version", -1, "")
	if code, ok := m.parse(fs, args, jobInspectHelp); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return m.usageError("This command takes one argument: <job>", jobInspectHelp)
	}
	c, ok := m.mustClient()
	if !ok {
		return 1
	}
	stub, code := lookupJob(m, c, fs.Arg(0))
	if stub == nil {
		return code
	}
	job, err := inspectJob(c, stub, version)
	if err != nil {
		m.errorf("%s", err)
		return 1
	}
	return m.printJSON(struct{ Job *api.Job }{job})
}

func inspectJob(c *api.Client, stub *api.JobListStub, version int64) (*api.Job, error) {
	if version < 0 {
		job, _, err := c.Jobs().Info(stub.ID, jobQuery(stub))
		if err != nil {
			return nil, fmt.Errorf("Error inspecting job: %w", err)
		}
		return job, nil
	}
	versions, _, _, err := c.Jobs().Versions(stub.ID, false, jobQuery(stub))
	if err != nil {
		return nil, fmt.Errorf("Error retrieving job versions: %w", err)
	}
	i := findVersion(versions, uint64(version))
	if i < 0 {
		return nil, fmt.Errorf("No job with version %d found", version)
	}
	return versions[i], nil
}
