package jobspec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"
	"github.com/stretchr/testify/require"
)

// corpusDir holds job files written the way operators write them, each
// beside the job Nomad's parser sends for it:
//
//	name.nomad.hcl     the job file
//	name.json          the expected job, in api.Job JSON (the wire format)
//	name.error         instead of name.json: a text the parse error must contain
//	name.options.json  optional: Options (ArgVars, VarFiles, Env) for the parse
//
// The files are parsed with the corpus directory as the working directory,
// as `nomad job run name.nomad.hcl` run there: relative paths of file() and
// the other file functions (and of VarFiles) resolve against it.
const corpusDir = "testdata/corpus"

// corpusDumpEnv names an (absolute) directory where TestCorpus writes what
// the parser produced for each file, in the expected files' form. It is an
// aid for writing a new case, never a source of truth: every value of an
// expected file is checked against Nomad's documented behaviour.
const corpusDumpEnv = "DROVER_CORPUS_DUMP"

// TestCorpus parses every corpus job file and compares the job with the
// expected JSON.
//
// The comparison normalises exactly one thing, on both sides alike (see
// wireTree): a field that is a nil pointer, nil slice, nil map or nil
// interface, or a non-pointer field holding its type's zero value, is left
// out. On the wire these are what the receiver decodes as "not set" anyway
// (a non-pointer field cannot say "set to zero"), so the expected files
// list only what the parser sets. A pointer to a zero value (`count = 0`,
// `env = false`) is kept: it differs from "unset", which the server
// defaults. Numbers are compared as JSON numbers. The expected JSON is
// decoded strictly into api.Job first, so a misspelt field fails the test
// instead of being ignored.
func TestCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.nomad.hcl"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 40, "the corpus is the parity check; keep it broad")
	t.Chdir(corpusDir)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".nomad.hcl")
		t.Run(name, func(t *testing.T) {
			runCorpusCase(t, name)
		})
	}
}

func runCorpusCase(t *testing.T, name string) {
	opts := Options{Strict: true}
	if raw, err := os.ReadFile(name + ".options.json"); err == nil {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&opts), "options file")
	}
	job, parseErr := ParseFile(name+".nomad.hcl", opts)

	if wantErr, err := os.ReadFile(name + ".error"); err == nil {
		require.Error(t, parseErr, "the file must be refused")
		require.Contains(t, parseErr.Error(), strings.TrimSpace(string(wantErr)))
		_, statErr := os.Stat(name + ".json")
		require.True(t, os.IsNotExist(statErr), "a case has either an .error or a .json")
		return
	}
	require.NoError(t, parseErr)
	gotTree, _ := wireTree(reflect.ValueOf(job), true)
	if dir := os.Getenv(corpusDumpEnv); dir != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".json"), []byte(indentJSON(t, gotTree)+"\n"), 0o600))
	}

	raw, err := os.ReadFile(name + ".json")
	require.NoError(t, err, "every corpus file needs an expected .json (or .error)")
	var want api.Job
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&want), "expected JSON must be an api.Job")

	wantTree, _ := wireTree(reflect.ValueOf(&want), true)
	if !reflect.DeepEqual(wantTree, gotTree) {
		require.Equal(t, indentJSON(t, wantTree), indentJSON(t, gotTree), "parsed job differs from %s.json", name)
	}
}

func indentJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// wireTree turns v into plain JSON data (map[string]any, []any, string,
// float64, bool) leaving out what is not set (see TestCorpus). keepZero
// keeps a zero scalar or empty struct: true behind pointers, in slices,
// maps and interfaces, where the value was set explicitly. ok is false when
// v is left out.
func wireTree(v reflect.Value, keepZero bool) (out any, ok bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, false
		}
		return wireTree(v.Elem(), true)
	case reflect.Struct:
		m := map[string]any{}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			key, skip := jsonKey(f)
			if skip {
				continue
			}
			if sub, ok := wireTree(v.Field(i), false); ok {
				m[key] = sub
			}
		}
		if len(m) == 0 && !keepZero {
			return nil, false
		}
		return m, true
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil, false
		}
		list := make([]any, 0, v.Len())
		for i := range v.Len() {
			sub, _ := wireTree(v.Index(i), true)
			list = append(list, sub)
		}
		return list, true
	case reflect.Map:
		if v.IsNil() {
			return nil, false
		}
		m := make(map[string]any, v.Len())
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			sub, _ := wireTree(v.MapIndex(k), true)
			m[k.String()] = sub
		}
		return m, true
	}
	if v.IsZero() && !keepZero {
		return nil, false
	}
	// Scalars: as a JSON round trip gives them (numbers become float64).
	b, err := json.Marshal(v.Interface())
	if err != nil {
		panic(err)
	}
	var scalar any
	if err := json.Unmarshal(b, &scalar); err != nil {
		panic(err)
	}
	return scalar, true
}

// jsonKey is the JSON name of struct field f, as encoding/json names it;
// skip is true for unexported fields and `json:"-"`.
func jsonKey(f reflect.StructField) (key string, skip bool) {
	if !f.IsExported() {
		return "", true
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	if name, _, _ := strings.Cut(tag, ","); name != "" {
		return name, false
	}
	return f.Name, false
}

// TestWireTree pins the normalisation the corpus comparison relies on: it
// must keep what distinguishes two jobs on the wire and drop only unset.
func TestWireTree(t *testing.T) {
	tree := func(j *api.Job) string {
		v, _ := wireTree(reflect.ValueOf(j), true)
		return indentJSON(t, v)
	}
	unset := &api.Job{ID: ptr("x"), Constraints: []*api.Constraint{{LTarget: "a", RTarget: "b"}}}
	withOp := &api.Job{ID: ptr("x"), Constraints: []*api.Constraint{{LTarget: "a", RTarget: "b", Operand: "="}}}
	require.NotEqual(t, tree(unset), tree(withOp), "a missing operator must show")

	noCount := &api.Job{TaskGroups: []*api.TaskGroup{{Name: ptr("g")}}}
	zeroCount := &api.Job{TaskGroups: []*api.TaskGroup{{Name: ptr("g"), Count: ptr(0)}}}
	require.NotEqual(t, tree(noCount), tree(zeroCount), "count = 0 differs from no count")

	emptyMeta := &api.Job{Meta: map[string]string{}}
	require.NotEqual(t, tree(&api.Job{}), tree(emptyMeta), "an empty map is kept")

	cfg := &api.Job{TaskGroups: []*api.TaskGroup{{Tasks: []*api.Task{{Config: map[string]any{"n": 3, "flag": false}}}}}}
	require.JSONEq(t, `{"TaskGroups":[{"Tasks":[{"Config":{"n":3,"flag":false}}]}]}`, tree(cfg))

	// A zero non-pointer field is dropped, an element of a list is not.
	require.JSONEq(t, `{"Constraints":[{}]}`, tree(&api.Job{Constraints: []*api.Constraint{{Operand: ""}}}))
	require.JSONEq(t, `{}`, tree(&api.Job{AllAtOnce: nil, Status: nil}))
}

// TestCorpusCallsEveryFunction: every function of the parser's table is
// called by at least one corpus file, so each has an expected value there.
func TestCorpusCallsEveryFunction(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.nomad.hcl"))
	require.NoError(t, err)
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all.Write(b)
	}
	text := all.String()
	for name := range functions() {
		called := false
		for _, sep := range []string{" ", "(", "[", "{", "\t", "\n", "=", ",", "!"} {
			if strings.Contains(text, sep+name+"(") {
				called = true
				break
			}
		}
		require.True(t, called, "no corpus file calls %s()", name)
	}
}
