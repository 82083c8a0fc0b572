package structs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sha256OfTest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestValidate_Artifacts(t *testing.T) {
	ok := func() *TaskArtifact {
		return &TaskArtifact{GetterSource: "https://example.com/a.tgz", GetterMode: GetterModeAny, RelativeDest: "local/"}
	}
	cases := []struct {
		name   string
		mutate func(a *TaskArtifact)
		want   string // "" means valid
	}{
		{"valid", func(a *TaskArtifact) {}, ""},
		{"into the shared alloc dir", func(a *TaskArtifact) { a.RelativeDest = "../alloc/data" }, ""},
		{"absolute is inside the task dir", func(a *TaskArtifact) { a.RelativeDest = "/etc/app" }, ""},
		{"empty mode is any", func(a *TaskArtifact) { a.GetterMode = "" }, ""},
		{"good checksum", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "sha256:" + sha256OfTest} }, ""},
		{"interpolated checksum is checked at run time", func(a *TaskArtifact) {
			a.GetterOptions = map[string]string{"checksum": "${NOMAD_META_sum}"}
		}, ""},
		{"git source", func(a *TaskArtifact) { a.GetterSource = "git::https://example.com/repo.git" }, ""},
		{"public S3 object over https", func(a *TaskArtifact) { a.GetterSource = "https://bucket.s3.amazonaws.com/a.tgz" }, ""},
		{"missing source", func(a *TaskArtifact) { a.GetterSource = "" }, "artifact 1: source must be specified"},
		{"bad mode", func(a *TaskArtifact) { a.GetterMode = "tree" }, `artifact 1: invalid artifact mode "tree"; must be one of: any, file, dir`},
		{"dotdot escape", func(a *TaskArtifact) { a.RelativeDest = "../../etc" }, "artifact 1: destination escapes allocation directory"},
		{"deep dotdot escape", func(a *TaskArtifact) { a.RelativeDest = "local/../../../x" }, "artifact 1: destination escapes allocation directory"},
		{"empty checksum", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": " "} }, "checksum value cannot be empty"},
		{"checksum without type", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": sha256OfTest} },
			`checksum must be given as "type:value"; got "` + sha256OfTest + `"`},
		{"checksum not hex", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "sha256:zz"} }, "invalid checksum: "},
		{"checksum type", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "crc32:abcd"} }, "unsupported checksum type: crc32"},
		{"checksum length", func(a *TaskArtifact) { a.GetterOptions = map[string]string{"checksum": "sha1:abc123"} }, "invalid sha1 checksum: abc123"},
		{"forced s3", func(a *TaskArtifact) { a.GetterSource = "s3::https://s3.amazonaws.com/b/a.tgz" },
			`source "s3::https://s3.amazonaws.com/b/a.tgz": s3 sources are refused: S3 downloads need AWS credentials`},
		{"detected s3", func(a *TaskArtifact) { a.GetterSource = "bucket.s3.amazonaws.com/a.tgz" }, "s3 sources are refused"},
		{"s3 scheme", func(a *TaskArtifact) { a.GetterSource = "s3://bucket/a.tgz" }, "s3 sources are refused"},
		{"gcs", func(a *TaskArtifact) { a.GetterSource = "gcs::https://www.googleapis.com/storage/v1/b/a.tgz" },
			"gcs sources are refused: GCS downloads need Google Cloud credentials"},
		{"detected gcs", func(a *TaskArtifact) { a.GetterSource = "www.googleapis.com/storage/v1/b/a.tgz" }, "gcs sources are refused"},
		{"hg", func(a *TaskArtifact) { a.GetterSource = "hg::https://example.com/repo" }, "hg sources are refused: Drover clients have no Mercurial getter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := testJob()
			a := ok()
			tc.mutate(a)
			j.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{a}
			err := j.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			assert.True(t, containsProblem(verr.Problems, tc.want), "want a problem containing %q, got:\n%s", tc.want, err)
			assert.True(t, containsProblem(verr.Problems, `task "server": artifact 1: `), "the problem names the task and the artifact: %s", err)
		})
	}
}

func TestGetterScheme(t *testing.T) {
	for src, want := range map[string]string{
		"https://example.com/a":             "https",
		"HTTP://example.com/a":              "http",
		"git::https://example.com/r.git":    "git",
		"git@github.com:org/repo.git":       "",
		"file:///srv/a.tgz":                 "file",
		"s3::https://s3.amazonaws.com/b/k":  "s3",
		"s3-eu-west-1.amazonaws.com/b/k":    "s3",
		"example.com/a.tgz":                 "",
		"storage.googleapis.com/b/k":        "gcs",
		"${NOMAD_META_src}":                 "",
		"https://b.s3.amazonaws.com/public": "https",
	} {
		assert.Equal(t, want, GetterScheme(src), src)
	}
}

// TestDiff_ArtifactChangeIsDestructive: a changed artifact block replaces
// the allocations, as in Nomad (they must fetch it again).
func TestDiff_ArtifactChangeIsDestructive(t *testing.T) {
	a, b := testJob(), testJob()
	a.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{GetterSource: "https://example.com/v1.tgz"}}
	b.TaskGroups[0].Tasks[0].Artifacts = []*TaskArtifact{{GetterSource: "https://example.com/v2.tgz"}}
	assert.Equal(t, UpdateTypeDestructive, a.TaskGroups[0].UpdateType(b.TaskGroups[0]))
	d, err := a.Diff(b, false)
	require.NoError(t, err)
	require.Len(t, d.TaskGroups, 1)
	require.Len(t, d.TaskGroups[0].Tasks, 1)
	var names []string
	for _, o := range d.TaskGroups[0].Tasks[0].Objects {
		names = append(names, o.Type+" "+o.Name)
	}
	assert.Equal(t, "Deleted Artifact,Added Artifact", strings.Join(names, ","))
}
