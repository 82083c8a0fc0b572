package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse_ClientArtifactBlock(t *testing.T) {
	c, err := Parse("client.hcl", []byte(`client {
  enabled = true
  artifact {
    http_read_timeout              = "5m"
    http_max_size                  = "2GiB"
    gcs_timeout                    = "1m"
    git_timeout                    = "90s"
    hg_timeout                     = "2m"
    s3_timeout                     = "3m"
    decompression_limit_size       = "1GB"
    decompression_limit_file_count = 100
    disable_filesystem_isolation   = true
    set_environment_variables      = "HTTP_PROXY,GIT_SSH_COMMAND"
    filesystem_isolation_extra_paths = ["f:r:/etc/ssl/certs"]
  }
}
`))
	require.NoError(t, err)
	a := c.Client.Artifact
	require.NotNil(t, a)
	assert.Equal(t, 5*time.Minute, *a.HTTPReadTimeout)
	assert.Equal(t, int64(2<<30), *a.HTTPMaxSize)
	assert.Equal(t, time.Minute, *a.GCSTimeout)
	assert.Equal(t, 90*time.Second, *a.GitTimeout)
	assert.Equal(t, 2*time.Minute, *a.HgTimeout)
	assert.Equal(t, 3*time.Minute, *a.S3Timeout)
	assert.Equal(t, int64(1e9), *a.DecompressionSizeLimit)
	assert.Equal(t, 100, *a.DecompressionFileCountLimit)
	assert.True(t, *a.DisableFilesystemIsolation)
	assert.Equal(t, "HTTP_PROXY,GIT_SSH_COMMAND", *a.SetEnvironmentVariables)
	assert.Equal(t, []string{"client.artifact.filesystem_isolation_extra_paths"}, c.Ignored)
	assert.NotContains(t, c.Ignored, "client.artifact", "acted on, not ignored")

	// A later file overrides only what it sets.
	o, err := Parse("more.hcl", []byte("client {\n  artifact {\n    http_max_size = \"10MB\"\n  }\n}\n"))
	require.NoError(t, err)
	m := DefaultConfig().Merge(c).Merge(o)
	assert.Equal(t, int64(10e6), *m.Client.Artifact.HTTPMaxSize)
	assert.Equal(t, 5*time.Minute, *m.Client.Artifact.HTTPReadTimeout)
	assert.Equal(t, int64(2<<30), *c.Client.Artifact.HTTPMaxSize, "Merge does not modify its inputs")
	cp := m.Copy()
	*cp.Client.Artifact.HTTPMaxSize = 1
	assert.Equal(t, int64(10e6), *m.Client.Artifact.HTTPMaxSize, "Copy is deep")
}

func TestParse_ClientArtifactErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`http_max_size = "lots"`, `must be a size such as "100GB"`},
		{`http_read_timeout = "soon"`, "http_read_timeout"},
		{`decompression_limit_file_count = -1`, "must not be negative"},
		{`http_max_sise = "1GB"`, "http_max_sise"},
	} {
		_, err := Parse("a.hcl", []byte("client {\n  artifact {\n    "+tc.body+"\n  }\n}\n"))
		require.Error(t, err, tc.body)
		assert.Contains(t, err.Error(), tc.want, tc.body)
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{
		"100GB": 100e9, "100GiB": 100 << 30, "512 MiB": 512 << 20, "1024": 1024, "1.5KB": 1500, "0": 0, "10b": 10,
	} {
		got, err := ParseBytes(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "GB", "-1GB", "12XB", "1e3"} {
		_, err := ParseBytes(s)
		assert.Error(t, err, s)
	}
}
