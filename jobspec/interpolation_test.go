package jobspec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInterpolation_RuntimeVerbatim checks that runtime interpolations, which
// only the Nomad client can resolve, come out exactly as written.
func TestInterpolation_RuntimeVerbatim(t *testing.T) {
	cases := []struct{ name, expr, want string }{
		{"port env", `"${NOMAD_PORT_http}"`, "${NOMAD_PORT_http}"},
		{"attr", `"${attr.kernel.name}"`, "${attr.kernel.name}"},
		{"node", `"${node.unique.name}"`, "${node.unique.name}"},
		{"meta", `"${meta.rack}"`, "${meta.rack}"},
		{"alloc dir with suffix", `"${NOMAD_ALLOC_DIR}/x"`, "${NOMAD_ALLOC_DIR}/x"},
		{"hyphenated attr", `"${attr.unique.network.ip-address}"`, "${attr.unique.network.ip-address}"},
		{"mixed with text", `"http://${attr.unique.network.ip-address}:${NOMAD_PORT_http}/"`,
			"http://${attr.unique.network.ip-address}:${NOMAD_PORT_http}/"},
		{"mixed with var", `"${var.name}-${node.unique.id}"`, "web-${node.unique.id}"},
		{"siblings under one root", `"${attr.unique.hostname} ${attr.unique.network.ip-address}"`,
			"${attr.unique.hostname} ${attr.unique.network.ip-address}"},
		{"bare traversal", `node.datacenter`, "${node.datacenter}"},
		{"string index", `"${meta["rack.zone"]}"`, `${meta["rack.zone"]}`},
		{"escaped", `"$${literal}"`, "${literal}"},
		{"heredoc", "<<EOT\nbind ${NOMAD_IP_http}\nEOT\n", "bind ${NOMAD_IP_http}\n"},
		{"for expression", `join(" ", [for s in ["a", "b"] : "${s}-${NOMAD_ALLOC_INDEX}"])`,
			"a-${NOMAD_ALLOC_INDEX} b-${NOMAD_ALLOC_INDEX}"},
		{"conditional", `var.name == "web" ? "${node.region}" : "x"`, "${node.region}"},
		{"inside function", `join(",", ["${NOMAD_TASK_DIR}", "b"])`, "${NOMAD_TASK_DIR},b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "variable \"name\" {\n  default = \"web\"\n}\n" + wrapTask("env = { OUT = "+tc.expr+" }")
			task := onlyTask(t, mustParse(t, src))
			require.Equal(t, tc.want, task.Env["OUT"])
		})
	}
}

// TestInterpolation_EverywhereInJob checks placeholders in several decoding
// paths: attributes, config, shorthands, template data and labels of dynamic blocks.
func TestInterpolation_EverywhereInJob(t *testing.T) {
	job := mustParse(t, `
job "j" {
  constraint {
    distinct_property = "${meta.rack}"
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "${NOMAD_TASK_DIR}/run.sh"
        args    = ["--port", "${NOMAD_PORT_http}", "--host", "${attr.unique.network.ip-address}"]
      }
      template {
        data        = "addr={{ env \"NOMAD_ADDR_http\" }} dir=${NOMAD_SECRETS_DIR}"
        destination = "${NOMAD_TASK_DIR}/app.env"
      }
    }
  }
}`)
	require.Equal(t, "${meta.rack}", job.Constraints[0].LTarget)
	task := onlyTask(t, job)
	require.Equal(t, "${NOMAD_TASK_DIR}/run.sh", task.Config["command"])
	require.Equal(t, []any{"--port", "${NOMAD_PORT_http}", "--host", "${attr.unique.network.ip-address}"}, task.Config["args"])
	require.Equal(t, `addr={{ env "NOMAD_ADDR_http" }} dir=${NOMAD_SECRETS_DIR}`, *task.Templates[0].EmbeddedTmpl)
	require.Equal(t, "${NOMAD_TASK_DIR}/app.env", *task.Templates[0].DestPath)
}

// TestInterpolation_LeafAndObjectConflict: a path used both as a value and as
// a prefix of a longer path cannot be both; the longer path wins and the
// shorter use is an ordinary error (no panic). Separate attributes are independent.
func TestInterpolation_LeafAndObjectConflict(t *testing.T) {
	_, err := parseSrc(t, wrapTask(`env = { A = "${node.class} ${node.class.sub}" }`))
	require.ErrorContains(t, err, jobFile+":4,")

	task := onlyTask(t, mustParse(t, wrapTask("env = { A = \"${node.class}\" }\nmeta = { B = \"${node.class.sub}\" }")))
	require.Equal(t, "${node.class}", task.Env["A"])
	require.Equal(t, "${node.class.sub}", task.Meta["B"])
}
