// Package jobspec turns a Nomad-style HCL2 jobspec (or a JSON job in api.Job
// form) into an *api.Job of the MPL-2.0 nomad/api module.
//
// It is Drover's own clean-room parser built only on upstream
// github.com/hashicorp/hcl/v2 and github.com/zclconf/go-cty. It supports
// variable blocks (with -var, -var-file and NOMAD_VAR_ inputs), locals, the
// usual HCL functions, dynamic blocks, opaque driver config bodies and it
// preserves runtime interpolations such as "${NOMAD_PORT_http}" or
// "${attr.kernel.name}" verbatim for the client to resolve.
//
// The output is deliberately not canonicalized: defaults and the job-to-group
// update merge are applied by the server (api.Job.Canonicalize), as in Nomad.
//
// Importers: the drover CLI (job run/plan/validate), the agent's
// /v1/jobs/parse endpoint (command/agent, with file functions off) and tests.
// The server (nomad) never parses HCL; it receives jobs as JSON.
package jobspec
