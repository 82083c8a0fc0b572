package jobspec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// evalOut parses a job whose meta "out" is expr and returns that value.
func evalOut(t *testing.T, expr string) string {
	t.Helper()
	job := mustParse(t, "job \"j\" {\n  meta = { out = "+expr+" }\n}\n")
	return job.Meta["out"]
}

func TestFunctions(t *testing.T) {
	cases := []struct{ expr, want string }{
		{`upper("abc")`, "ABC"},
		{`lower("ABC")`, "abc"},
		{`format("%s-%03d", "web", 7)`, "web-007"},
		{`jsonencode(formatlist("%s:%d", ["a", "b"], 80))`, `["a:80","b:80"]`},
		{`join(",", ["a", "b"])`, "a,b"},
		{`jsonencode(split(",", "a,b"))`, `["a","b"]`},
		{`jsonencode(concat(["a"], ["b"]))`, `["a","b"]`},
		{`jsonencode(merge({a = 1}, {b = 2}))`, `{"a":1,"b":2}`},
		{`lookup({a = "x"}, "b", "dflt")`, "dflt"},
		{`length([1, 2, 3])`, "3"},
		{`coalesce(null, "fallback")`, "fallback"},
		{`jsonencode(range(3))`, "[0,1,2]"},
		{`jsondecode("{\"k\":\"v\"}").k`, "v"},
		{`regex("v([0-9]+)", "v42")[0]`, "42"},
		{`regex_replace("a1b2", "[0-9]", "_")`, "a_b_"},
		{`regexreplace("a1b2", "[0-9]", "")`, "ab"},
		{`replace("a-b-c", "-", "+")`, "a+b+c"},
		{`trimspace("  x  ")`, "x"},
		{`trim("--x--", "-")`, "x"},
		{`trimprefix("web-1", "web-")`, "1"},
		{`trimsuffix("web-1", "-1")`, "web"},
		{`substr("hello", 1, 3)`, "ell"},
		{`element(["a", "b"], 3)`, "b"},
		{`jsonencode(keys({b = 1, a = 2}))`, `["a","b"]`},
		{`jsonencode(values({b = 1, a = 2}))`, `[2,1]`},
		{`contains(["a", "b"], "b")`, "true"},
		{`jsonencode(distinct(["a", "a", "b"]))`, `["a","b"]`},
		{`jsonencode(flatten([["a"], ["b", ["c"]]]))`, `["a","b","c"]`},
		{`min(3, 1, 2)`, "1"},
		{`max(3, 1, 2)`, "3"},
		{`abs(-4)`, "4"},
		{`ceil(1.2)`, "2"},
		{`floor(1.8)`, "1"},
		{`tostring(12)`, "12"},
		{`tonumber("12") + 1`, "13"},
		{`tobool("true")`, "true"},
		{`jsonencode(tolist(["a"]))`, `["a"]`},
		{`jsonencode(tomap({a = "b"}))`, `{"a":"b"}`},
		{`jsonencode(toset(["b", "a", "b"]))`, `["a","b"]`},
		{`chomp("x\n")`, "x"},
		{`indent(2, "a\nb")`, "a\n  b"},
		{`title("hello world")`, "Hello World"},
		{`jsonencode(reverse([1, 2, 3]))`, "[3,2,1]"},
		{`jsonencode(sort(["b", "a"]))`, `["a","b"]`},
		{`jsonencode(zipmap(["a", "b"], [1, 2]))`, `{"a":1,"b":2}`},
		{`try(jsondecode("nope"), "fallback")`, "fallback"},
		{`can(regex("^[a-z]+$", "abc"))`, "true"},
		{`can(regex("^[a-z]+$", "ABC"))`, "false"},
		{`base64encode("hi")`, "aGk="},
		{`base64decode("aGk=")`, "hi"},
		{`strrev("abc")`, "cba"},
		// Nomad's documented behaviour where plain cty differs.
		{`reverse("abc")`, "cba"},
		{`length("héllo")`, "5"},
		{`length({a = 1})`, "1"},
		{`length(toset(["a", "b", "a"]))`, "2"},
		{`index({a = 1, c = 2}, "c")`, "2"},
		{`index(["a", "b"], 1)`, "b"},
		{`coalesce("", "b")`, "b"},
		{`jsonencode(convert(["1", 2], list(number)))`, "[1,2]"},
		{`sha256("")`, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{`urlencode("a b")`, "a+b"},
		{`yamldecode("a: [1, 2]").a[1]`, "2"},
		{`cidrsubnet("10.0.0.0/8", 8, 2)`, "10.2.0.0/16"},
		{`basename("a/b.txt")`, "b.txt"},
		{`length(uuidv4())`, "36"},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			require.Equal(t, tc.want, evalOut(t, tc.expr))
		})
	}
}

func TestFunctions_File(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "script.sh"), []byte("#!/bin/sh\necho hi\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	t.Chdir(dir) // relative paths resolve against the working directory, as in Nomad
	path := filepath.Join(dir, "job.nomad.hcl")
	src := `job "j" {
  meta {
    script  = file("script.sh")
    exists  = fileexists("script.sh")
    missing = fileexists("nope.txt")
    abs     = fileexists("` + filepath.Join(dir, "script.sh") + `")
  }
}`
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	job, err := ParseFile(path, Options{})
	require.NoError(t, err)
	require.Equal(t, map[string]string{
		"script": "#!/bin/sh\necho hi\n", "exists": "true", "missing": "false", "abs": "true",
	}, job.Meta)

	// Errors: missing file, directory passed to fileexists, unknown function.
	for expr, want := range map[string]string{
		`file("nope.txt")`:   "Error in function call",
		`fileexists("sub")`:  "is not a regular file",
		`env("HOME")`:        `Call to unknown function; There is no function named "env"`,
		`file("script.sh")x`: "Missing attribute separator",
	} {
		src := "job \"j\" {\n  meta = { out = " + expr + " }\n}\n"
		require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
		_, err := ParseFile(path, Options{})
		require.ErrorContains(t, err, want, expr)
		require.ErrorContains(t, err, "job.nomad.hcl:2,", expr)
	}
}

// TestFunctions_FilePathsFromWorkingDirectory: as in Nomad, a relative path
// of the file functions names a file of the working directory, not of the
// job file's directory.
func TestFunctions_FilePathsFromWorkingDirectory(t *testing.T) {
	jobDir, workDir := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(jobDir, "beside-job.txt"), []byte("job dir"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(workDir, "in-cwd.txt"), []byte("cwd"), 0o600))
	t.Chdir(workDir)
	path := filepath.Join(jobDir, "job.nomad.hcl")

	src := "job \"j\" {\n  meta {\n    a = file(\"in-cwd.txt\")\n    b = fileexists(\"beside-job.txt\")\n    c = abspath(\"in-cwd.txt\")\n  }\n}\n"
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	job, err := ParseFile(path, Options{})
	require.NoError(t, err)
	cwd, err := os.Getwd()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "cwd", "b": "false", "c": filepath.Join(cwd, "in-cwd.txt")}, job.Meta)

	require.NoError(t, os.WriteFile(path, []byte("job \"j\" {\n  meta { a = file(\"beside-job.txt\") }\n}\n"), 0o600))
	_, err = ParseFile(path, Options{})
	require.ErrorContains(t, err, "no file exists at beside-job.txt")
}

// TestFunctions_NoFS: without file system access every function that reads
// the parsing machine's files or reveals its paths fails, naming itself.
func TestFunctions_NoFS(t *testing.T) {
	calls := map[string]string{
		"abspath": `abspath("x")`, "file": `file("/etc/hostname")`, "filebase64": `filebase64("/etc/hostname")`,
		"fileescaped": `fileescaped("/etc/hostname")`, "fileexists": `fileexists("/etc/hostname")`,
		"fileset": `join(",", fileset("/etc", "*"))`, "pathexpand": `pathexpand("~/x")`,
	}
	require.Len(t, calls, len(fsFunctions), "every file system function is checked")
	for _, name := range fsFunctions {
		src := "job \"j\" {\n  meta = { out = " + calls[name] + " }\n}\n"
		_, err := Parse("job.nomad.hcl", []byte(src), Options{NoFS: true})
		require.ErrorContains(t, err, name+"() is disabled", name)
	}
	// bcrypt's cost is bounded there.
	_, err := Parse("job.nomad.hcl", []byte("job \"j\" {\n  meta = { out = bcrypt(\"x\", 31) }\n}\n"), Options{NoFS: true})
	require.ErrorContains(t, err, "a bcrypt cost above 12 is refused")
	job, err := Parse("job.nomad.hcl", []byte("job \"j\" {\n  meta = { out = substr(bcrypt(\"x\", 4), 0, 7) }\n}\n"), Options{NoFS: true})
	require.NoError(t, err)
	require.Equal(t, "$2a$04$", job.Meta["out"])

	// The path functions that read nothing stay available.
	job, err = Parse("job.nomad.hcl", []byte("job \"j\" {\n  meta = { out = dirname(\"/a/b\") }\n}\n"), Options{NoFS: true})
	require.NoError(t, err)
	require.Equal(t, "/a", job.Meta["out"])
}
