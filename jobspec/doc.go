// Package jobspec turns a Nomad-style HCL2 jobspec (or a JSON job in api.Job
// form) into an *api.Job of the MPL-2.0 nomad/api module.
//
// It is Drover's own clean-room parser built only on upstream
// github.com/hashicorp/hcl/v2, github.com/zclconf/go-cty and the MPL/Apache
// function libraries go-cty-funcs and go-cty-yaml. It supports variable
// blocks (with -var, -var-file and NOMAD_VAR_ inputs), locals, the HCL2
// functions Nomad documents for job files (file functions resolve relative
// paths against the working directory, as Nomad's do), dynamic blocks,
// opaque driver config bodies and it preserves runtime interpolations such
// as "${NOMAD_PORT_http}" or "${attr.kernel.name}" verbatim for the client
// to resolve.
//
// What the parser itself fills in is what Nomad's parser sends: "=" for a
// constraint or affinity without operator, weight 50 for an affinity
// without weight, a job's or group's vault block on each task without one,
// and the vault, template and periodic defaults listed in normalize.go.
// testdata/corpus holds job files with the JSON expected for each.
//
// The output is deliberately not canonicalized: defaults and the job-to-group
// update merge are applied by the server (api.Job.Canonicalize), as in Nomad.
//
// Importers: the drover CLI (job run/plan/validate), the agent's
// /v1/jobs/parse endpoint (command/agent, with file functions off) and tests.
// The server (nomad) never parses HCL; it receives jobs as JSON.
package jobspec
