package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/command/agent/config"
	"github.com/drover-project/drover/jobspec"
	"github.com/drover-project/drover/nomad/structs"
)

// The server's verdict on every job file of the jobspec corpus
// (jobspec/testdata/corpus) that parses: each name.nomad.hcl has a curated
// name.verdict beside it, written from the rules (helper/apiconv's
// refusals, structs validation, the drivers' config schemas):
//
//	accepted            the job registers; each following line is a
//	<warning>           warning the registration answers, in order
//
//	refused             the job is refused with HTTP 400 and nothing is
//	<problem>           written; each following line is one problem of
//	                    the answer, exactly and in order
//
// Lines starting with "#" are comments (why a verdict is what it is, a
// known divergence from Nomad); blank lines are ignored.
//
// The test cluster is the one the files are written for: region "eu" and
// namespace "shop" exist (update-canary names them), image pinning is off
// (no registry is reachable from CI; pinning decides nothing about the
// blocks). Each job is parsed as jobspec's TestCorpus parses it (strict,
// with name.options.json), then submitted as `nomad job run` submits it:
// /v1/validate/job, then PUT /v1/jobs with the job's region and namespace.
func TestContractCorpusVerdicts(t *testing.T) {
	ta := newTestAgentWith(t, func(cfg *config.Config) {
		cfg.Region = "eu"
		cfg.Server.ImagePinning = config.ImagePinningOff
	})
	_, err := ta.client.Namespaces().Register(&api.Namespace{Name: "shop"}, nil)
	require.NoError(t, err)

	corpus, err := filepath.Abs(filepath.Join("..", "..", "jobspec", "testdata", "corpus"))
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(corpus, "*.nomad.hcl"))
	require.NoError(t, err)
	verdicts, err := filepath.Glob(filepath.Join(corpus, "*.verdict"))
	require.NoError(t, err)
	for _, v := range verdicts {
		_, err := os.Stat(strings.TrimSuffix(v, ".verdict") + ".nomad.hcl")
		require.NoError(t, err, "%s is the verdict on no job file", filepath.Base(v))
	}
	t.Chdir(corpus) // file() paths and var files are relative to it
	counts := map[string]int{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".nomad.hcl")
		if _, err := os.Stat(name + ".error"); err == nil {
			_, statErr := os.Stat(name + ".verdict")
			require.True(t, os.IsNotExist(statErr), "%s: a file the parser refuses has no server verdict", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			want := readVerdict(t, name+".verdict")
			got := corpusVerdict(t, ta, name)
			require.Equal(t, want, got, "server verdict on %s.nomad.hcl differs from %s.verdict", name, name)
			counts[want.outcome]++
		})
	}
	t.Logf("corpus verdicts: %v", counts)
	require.GreaterOrEqual(t, counts["accepted"]+counts["refused"], 50, "the corpus is the compatibility measure; keep it broad")
}

// verdict is the server's answer on one job file.
type verdict struct {
	outcome string   // "accepted" or "refused"
	lines   []string // the warnings (accepted) or the problems (refused)
}

func readVerdict(t *testing.T, path string) verdict {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err, "every corpus file that parses needs a curated %s", path)
	var v verdict
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if v.outcome == "" {
			v.outcome = line
			require.Contains(t, []string{"accepted", "refused"}, line, "%s: the first line is the outcome", path)
			continue
		}
		v.lines = append(v.lines, line)
	}
	require.NotEmpty(t, v.outcome, "%s is empty", path)
	if v.outcome == "refused" {
		require.NotEmpty(t, v.lines, "%s: a refusal lists its problems", path)
	}
	return v
}

// corpusVerdict parses the corpus file name, validates and registers it,
// and checks that both endpoints agree and that a refusal writes nothing.
func corpusVerdict(t *testing.T, ta *testAgent, name string) verdict {
	t.Helper()
	opts := jobspec.Options{Strict: true}
	if raw, err := os.ReadFile(name + ".options.json"); err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&opts), "options file")
	}
	parse := func() *api.Job {
		job, err := jobspec.ParseFile(name+".nomad.hcl", opts)
		require.NoError(t, err)
		return job
	}
	// Validate and register get a job each: the server side of the api
	// client canonicalizes what it is sent, the submitted value is not
	// reused.
	validated := parse()
	wo := &api.WriteOptions{}
	if validated.Region != nil {
		wo.Region = *validated.Region
	}
	if validated.Namespace != nil {
		wo.Namespace = *validated.Namespace
	}
	val, _, err := ta.client.Jobs().Validate(validated, wo)
	require.NoError(t, err, "validate answers 200 with the problems in its body")

	job := parse()
	resp, _, regErr := ta.client.Jobs().Register(job, wo)
	qo := &api.QueryOptions{Region: wo.Region, Namespace: wo.Namespace}
	if regErr != nil {
		var ure api.UnexpectedResponseError
		require.True(t, errors.As(regErr, &ure), "want an HTTP error, got %T: %v", regErr, regErr)
		require.Equal(t, http.StatusBadRequest, ure.StatusCode(), ure.Body())
		problems := problemLines(ure.Body())
		require.Equal(t, problems, problemLines(val.Error), "validate and register give the same problems")
		_, _, err := ta.client.Jobs().Info(*job.ID, qo)
		require.Error(t, err, "a refused job is not written")
		return verdict{outcome: "refused", lines: problems}
	}
	require.Empty(t, val.Error, "register accepted what validate refused")
	require.Equal(t, allDriversKnown(job), val.DriverConfigValidated)
	warnings := warningLines(resp.Warnings)
	require.Equal(t, warnings, warningLines(val.Warnings), "validate and register give the same warnings")
	stored, _, err := ta.client.Jobs().Info(*job.ID, qo)
	require.NoError(t, err, "an accepted job is stored")
	require.Equal(t, *job.ID, *stored.ID)
	return verdict{outcome: "accepted", lines: warnings}
}

// problemLines splits a 400's text (go-multierror's form, see
// structs.ValidationError) into its problems; a plain message is one.
func problemLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if p, ok := strings.CutPrefix(line, "\t* "); ok {
			out = append(out, p)
		}
	}
	if out == nil && strings.TrimSpace(text) != "" {
		out = []string{strings.TrimSpace(text)}
	}
	return out
}

// warningLines splits a registration's Warnings ("* a\n* b").
func warningLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, strings.TrimPrefix(line, "* "))
		}
	}
	return out
}

// allDriversKnown reports whether every task's driver is one of Drover's,
// whose configs the server checks.
func allDriversKnown(job *api.Job) bool {
	for _, tg := range job.TaskGroups {
		for _, task := range tg.Tasks {
			known := false
			for _, d := range structs.KnownDrivers {
				known = known || d == task.Driver
			}
			if !known {
				return false
			}
		}
	}
	return true
}
