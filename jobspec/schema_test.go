package jobspec

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// TestSchema_EveryTaggedFieldDecodes generates a jobspec that sets every
// hcl-tagged attribute and block reachable from api.Job (depth-limited) with
// a sample value, and checks that it parses. This guards the reflection
// decoder against api struct types it cannot handle.
func TestSchema_EveryTaggedFieldDecodes(t *testing.T) {
	var sb strings.Builder
	sb.WriteString("job \"all\" {\n")
	genBody(&sb, reflect.TypeFor[api.Job](), 1, map[reflect.Type]bool{})
	sb.WriteString("}\n")
	src := sb.String()
	job, err := Parse(jobFile, []byte(src), Options{})
	require.NoError(t, err, src)
	require.NotEmpty(t, job.TaskGroups)
	require.NotEmpty(t, job.TaskGroups[0].Tasks)
	require.NotNil(t, job.TaskGroups[0].Tasks[0].Resources)
}

// genBody writes sample attributes and one instance of each block of struct t.
func genBody(sb *strings.Builder, t reflect.Type, depth int, onPath map[reflect.Type]bool) {
	if depth > 7 || onPath[t] {
		return
	}
	onPath[t] = true
	defer delete(onPath, t)
	indent := strings.Repeat("  ", depth)
	info := infoFor(t)
	for _, f := range info.attrs {
		fmt.Fprintf(sb, "%s%s = %s\n", indent, f.name, sampleValue(t.Field(f.index).Type))
	}
	for _, f := range info.blocks {
		ft := t.Field(f.index).Type
		shape, elem := shapeOf(ft)
		switch shape {
		case shapeFlatMap:
			fmt.Fprintf(sb, "%s%s {\n%s  k = %s\n%s}\n", indent, f.name, indent, sampleValue(ft.Elem()), indent)
		case shapeOpaque:
			fmt.Fprintf(sb, "%s%s {\n%s  k = 1\n%s  nested {\n%s  }\n%s}\n", indent, f.name, indent, indent, indent, indent)
		case shapeSingle, shapeList, shapeLabeledMap:
			labels := ""
			n := len(infoFor(elem).labels)
			if shape == shapeLabeledMap && n == 0 {
				n = 1
			}
			for i := 0; i < n; i++ {
				labels += fmt.Sprintf(" \"l%d\"", i)
			}
			fmt.Fprintf(sb, "%s%s%s {\n", indent, f.name, labels)
			genBody(sb, elem, depth+1, onPath)
			fmt.Fprintf(sb, "%s}\n", indent)
		default:
			panic(fmt.Sprintf("unsupported block field %s.%s of type %s", t, f.name, ft))
		}
	}
}

// sampleValue returns an HCL literal accepted for Go type t.
func sampleValue(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		return `"1s"`
	}
	switch t.Kind() {
	case reflect.String:
		return `"s"`
	case reflect.Bool:
		return "true"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "1"
	case reflect.Float32, reflect.Float64:
		return "1.5"
	case reflect.Slice:
		return "[" + sampleValue(t.Elem()) + "]"
	case reflect.Map:
		return "{ k = " + sampleValue(t.Elem()) + " }"
	case reflect.Interface:
		return `"any"`
	}
	panic(fmt.Sprintf("no sample value for %s", t))
}
