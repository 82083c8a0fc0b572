package jobspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestErrors checks that malformed jobspecs fail with a positioned message.
// pos is the "file:line,col" prefix expected in the error.
func TestErrors(t *testing.T) {
	cases := []struct {
		name, src, pos, want string
	}{
		{"unknown argument", wrapTask(`foo = 1`), ":4,1-4",
			`Unsupported argument; An argument named "foo" is not expected here.`},
		{"unknown block", wrapTask(`bogus {}`), ":4,1-6",
			`Unsupported block type; Blocks of type "bogus" are not expected here.`},
		{"unknown dynamic block", wrapGroup("dynamic \"bogus\" {\n for_each = []\n content {}\n}"), ":3,9-16",
			`Unsupported block type; Blocks of type "bogus" are not expected here.`},
		{"bad duration", wrapTask(`kill_timeout = "5x"`), ":4,16-20",
			`Invalid value for "kill_timeout"; invalid duration "5x"`},
		{"duration of wrong type", wrapTask(`kill_timeout = ["5s"]`), ":4,16-22",
			`Invalid value for "kill_timeout"; a duration string`},
		{"wrong type number", wrapGroup(`count = "many"`), ":3,9-15",
			`Invalid value for "count"; a number is required`},
		{"fractional count", wrapGroup(`count = 1.5`), ":3,9-12",
			`Invalid value for "count"; a whole number is required, got 1.5`},
		{"weight out of range", "job \"j\" {\n  affinity {\n    weight = 200\n  }\n}", ":3,14-17",
			`Invalid value for "weight"; number 200 is out of range for int8`},
		{"negative unsigned", "job \"j\" {\n  spread {\n    target \"a\" {\n      percent = -1\n    }\n  }\n}", ":4,17-19",
			`Invalid value for "percent"; number -1 is out of range for uint8`},
		{"list expected", "job \"j\" {\n  datacenters = \"dc1\"\n}", ":2,17-22",
			`Invalid value for "datacenters"; a list is required, got string`},
		{"map expected", "job \"j\" {\n  meta = [\"a\"]\n}", ":2,10-15",
			`Invalid value for "meta"; a map is required`},
		{"two job blocks", "job \"a\" {}\njob \"b\" {}\n", ":2,1-8",
			"Duplicate job block; A jobspec must contain exactly one job block"},
		{"missing job block", "variable \"x\" {\n  default = 1\n}\n", ":1,1-1",
			"Missing job block"},
		{"job without label", "job {}\n", ":1,5-6", "Missing id for job"},
		{"unknown top-level block", "jobs \"x\" {}\n", ":1,1-5", `Unsupported block type; Blocks of type "jobs"`},
		{"undefined variable", "job \"j\" {\n  type = var.nope\n}", ":2,10-18",
			`Undefined variable; No variable named "nope" is declared`},
		{"undefined local", "job \"j\" {\n  type = local.nope\n}", ":2,10-20",
			`Undefined local; No local value named "nope"`},
		{"duplicate single block", wrapGroup("update {}\n update {}"), ":4,2-8", "Duplicate update block"},
		{"duplicate volume", wrapGroup("volume \"a\" {}\nvolume \"a\" {}"), ":4,8-11", "Duplicate volume block"},
		{"meta as block and attribute", "job \"j\" {\n  meta = {}\n  meta {}\n}", ":3,3-7",
			`Duplicate meta; "meta" is set both as an argument`},
		{"config attr and block", wrapTask("config {\n  x = 1\n  x {}\n}"), ":6,3-4", `Duplicate x; "x" is set both`},
		{"config bad expression", wrapTask("config {\n  x = var.nope\n}"), ":5,7-15", "Undefined variable"},
		{"conflicting shorthands", "job \"j\" {\n  constraint {\n    regexp = \"a\"\n    semver = \"b\"\n  }\n}", ":4,5-11",
			"Conflicting shorthands"},
		{"shorthand with operator", "job \"j\" {\n  constraint {\n    operator = \"=\"\n    regexp = \"a\"\n  }\n}", ":3,5-13",
			"Conflicting operator"},
		{"bad distinct_hosts", "job \"j\" {\n  constraint {\n    distinct_hosts = \"maybe\"\n  }\n}", ":3,22-29",
			`Invalid value for "distinct_hosts"; a bool is required`},
		{"syntax error", "job \"j\" {\n  type = \n}", ":2,10-3,1", "Invalid expression"},
		{"dynamic without for_each", wrapGroup("dynamic \"constraint\" {\n content {}\n}"), ":3,22-",
			`Missing required argument; The argument "for_each" is required`},
		{"dynamic for_each not iterable", wrapGroup("dynamic \"constraint\" {\n for_each = 3\n content {}\n}"), ":4,13-14",
			"Invalid dynamic for_each value"},
		{"function error", "job \"j\" {\n  type = upper(1, 2)\n}", ":2,", "Too many function arguments"},
		{"multiple errors reported", wrapTask("foo = 1\nbar = 2"), ":5,1-4",
			`An argument named "bar" is not expected here.`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseSrc(t, tc.src)
			require.Error(t, err)
			require.Contains(t, err.Error(), jobFile+tc.pos)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestErrors_OnePerLine checks that several problems are all reported, one per line.
func TestErrors_OnePerLine(t *testing.T) {
	_, err := parseSrc(t, wrapTask("foo = 1\nkill_timeout = \"x\"\nbar {}"))
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines {
		require.Contains(t, l, jobFile+":")
	}
}
