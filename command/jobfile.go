package command

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/nomad/api"

	"github.com/drover-project/drover/jobspec"
)

// stringSlice is a repeatable string flag.
type stringSlice []string

func (s *stringSlice) String() string     { return strings.Join(*s, ",") }
func (s *stringSlice) Set(v string) error { *s = append(*s, v); return nil }

// jobFileFlags are the flags of commands that read a jobspec file.
type jobFileFlags struct {
	vars     stringSlice
	varFiles stringSlice
	json     bool
	strict   bool
}

const jobFileFlagsHelp = `  -var 'key=value'
    Variable for template, can be used multiple times.

  -var-file=path
    Path to HCL2 file containing user variables, can be used multiple times.

  -json
    Parses the job file as JSON. If the outer object has a Job field, such
    as from "drover job inspect" or "drover job run -output", the value of
    the field is used as the job.

  -hcl2-strict
    Whether an error should be produced from the HCL2 parser where a variable
    has been supplied which is not defined within the root variables.
    Defaults to true.`

func (f *jobFileFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.vars, "var", "")
	fs.Var(&f.varFiles, "var-file", "")
	fs.BoolVar(&f.json, "json", false, "")
	fs.BoolVar(&f.strict, "hcl2-strict", true, "")
}

// load reads and parses the job at path ("-" is stdin) and returns it with
// the submission record the server keeps for `job inspect`.
func (f *jobFileFlags) load(stdin io.Reader, path string) (*api.Job, *api.JobSubmission, error) {
	src, err := readJobSource(stdin, path)
	if err != nil {
		return nil, nil, err
	}
	if f.json {
		job, err := decodeJSONJob(src)
		if err != nil {
			return nil, nil, err
		}
		return job, &api.JobSubmission{Source: string(src), Format: "json"}, nil
	}
	job, err := jobspec.Parse(path, src, jobspec.Options{
		ArgVars:  f.vars,
		VarFiles: f.varFiles,
		Env:      os.Environ(),
		Strict:   f.strict,
	})
	if err != nil {
		return nil, nil, err
	}
	if looksLikeJSON(src) {
		return job, &api.JobSubmission{Source: string(src), Format: "json"}, nil
	}
	sub, err := f.submission(src)
	if err != nil {
		return nil, nil, err
	}
	return job, sub, nil
}

// submission builds the HCL2 submission: the source, the -var flags and the
// concatenated contents of the -var-file files.
func (f *jobFileFlags) submission(src []byte) (*api.JobSubmission, error) {
	sub := &api.JobSubmission{Source: string(src), Format: "hcl2"}
	if len(f.vars) > 0 {
		sub.VariableFlags = make(map[string]string, len(f.vars))
		for _, kv := range f.vars {
			if k, v, ok := strings.Cut(kv, "="); ok {
				sub.VariableFlags[k] = v
			}
		}
	}
	var files []string
	for _, p := range f.varFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading var file: %w", err)
		}
		files = append(files, string(b))
	}
	sub.Variables = strings.Join(files, "\n")
	return sub, nil
}

// flagArgs renders the -var/-var-file flags back for a suggested command.
func (f *jobFileFlags) flagArgs() string {
	var parts []string
	for _, v := range f.vars {
		parts = append(parts, fmt.Sprintf("-var %q", v))
	}
	for _, v := range f.varFiles {
		parts = append(parts, "-var-file="+v)
	}
	if f.json {
		parts = append(parts, "-json")
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, " ") + " "
}

func readJobSource(stdin io.Reader, path string) ([]byte, error) {
	if path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading job file: %w", err)
	}
	return b, nil
}

// looksLikeJSON reports whether a jobspec is JSON (HCL cannot start with
// a brace).
func looksLikeJSON(src []byte) bool {
	return strings.HasPrefix(strings.TrimSpace(string(src)), "{")
}

// decodeJSONJob accepts both {"Job": {...}} and a bare job object.
func decodeJSONJob(src []byte) (*api.Job, error) {
	var wrapped struct{ Job *api.Job }
	if err := json.Unmarshal(src, &wrapped); err != nil {
		return nil, fmt.Errorf("parsing JSON job: %w", err)
	}
	if wrapped.Job != nil {
		return wrapped.Job, nil
	}
	var job api.Job
	if err := json.Unmarshal(src, &job); err != nil {
		return nil, fmt.Errorf("parsing JSON job: %w", err)
	}
	return &job, nil
}

// forceJobScope points the client at the job's region and namespace when
// the job sets them, as the server expects.
func forceJobScope(c *api.Client, job *api.Job) {
	if job.Region != nil && *job.Region != "" {
		c.SetRegion(*job.Region)
	}
	if job.Namespace != nil && *job.Namespace != "" {
		c.SetNamespace(*job.Namespace)
	}
}
