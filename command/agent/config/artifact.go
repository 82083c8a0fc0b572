package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// ArtifactConfig is the client's `artifact` block: the limits and timeouts
// of the tasks' artifact downloads. A nil field is not set (Nomad's
// default applies; see client/allocrunner/taskrunner/getter.DefaultConfig).
type ArtifactConfig struct {
	HTTPReadTimeout *time.Duration // http_read_timeout
	HTTPMaxSize     *int64         // http_max_size ("100GB"), in bytes
	GCSTimeout      *time.Duration // gcs_timeout
	GitTimeout      *time.Duration // git_timeout
	HgTimeout       *time.Duration // hg_timeout
	S3Timeout       *time.Duration // s3_timeout
	// DecompressionSizeLimit (decompression_limit_size, "100GB") and
	// DecompressionFileCountLimit (decompression_limit_file_count) bound
	// what one archive unpacks to; 0 is no limit.
	DecompressionSizeLimit      *int64
	DecompressionFileCountLimit *int
	DisableFilesystemIsolation  *bool   // disable_filesystem_isolation
	SetEnvironmentVariables     *string // set_environment_variables: comma-separated names
}

var artifactSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "http_read_timeout"}, {Name: "http_max_size"}, {Name: "gcs_timeout"},
		{Name: "git_timeout"}, {Name: "hg_timeout"}, {Name: "s3_timeout"},
		{Name: "decompression_limit_size"}, {Name: "decompression_limit_file_count"},
		{Name: "disable_filesystem_isolation"}, {Name: "set_environment_variables"},
	},
}

// decodeArtifact decodes client.artifact into a.
func decodeArtifact(c *Config, body hcl.Body, a *ArtifactConfig) hcl.Diagnostics {
	content, diags := body.Content(withNomadOnly(artifactSchema, "client.artifact"))
	noteNomadOnly(c, content, "client.artifact", artifactSchema)
	durations := map[string]**time.Duration{
		"http_read_timeout": &a.HTTPReadTimeout, "gcs_timeout": &a.GCSTimeout,
		"git_timeout": &a.GitTimeout, "hg_timeout": &a.HgTimeout, "s3_timeout": &a.S3Timeout,
	}
	for name, target := range durations {
		if attr, ok := content.Attributes[name]; ok {
			var d time.Duration
			diags = append(diags, decodeDuration(attr, &d)...)
			*target = &d
		}
	}
	for name, target := range map[string]**int64{"http_max_size": &a.HTTPMaxSize, "decompression_limit_size": &a.DecompressionSizeLimit} {
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		var s string
		if d := decodeAttr(attr, &s); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		n, err := ParseBytes(s)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: fmt.Sprintf("Invalid value for %q", name),
				Detail: err.Error(), Subject: attr.Expr.Range().Ptr(),
			})
			continue
		}
		*target = &n
	}
	if attr, ok := content.Attributes["decompression_limit_file_count"]; ok {
		var n int
		diags = append(diags, decodeAttr(attr, &n)...)
		if n < 0 {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError, Summary: `Invalid value for "decompression_limit_file_count"`,
				Detail: "must not be negative", Subject: attr.Expr.Range().Ptr(),
			})
		}
		a.DecompressionFileCountLimit = &n
	}
	if attr, ok := content.Attributes["disable_filesystem_isolation"]; ok {
		var b bool
		diags = append(diags, decodeAttr(attr, &b)...)
		a.DisableFilesystemIsolation = &b
	}
	if attr, ok := content.Attributes["set_environment_variables"]; ok {
		var s string
		diags = append(diags, decodeAttr(attr, &s)...)
		a.SetEnvironmentVariables = &s
	}
	return diags
}

// mergeArtifact overlays the fields o sets on c.
func mergeArtifact(c, o *ArtifactConfig) *ArtifactConfig {
	if o == nil {
		return c.copy()
	}
	o = o.copy()
	out := &ArtifactConfig{}
	if c != nil {
		out = c.copy()
	}
	set := func(dst **time.Duration, v *time.Duration) {
		if v != nil {
			*dst = v
		}
	}
	set(&out.HTTPReadTimeout, o.HTTPReadTimeout)
	set(&out.GCSTimeout, o.GCSTimeout)
	set(&out.GitTimeout, o.GitTimeout)
	set(&out.HgTimeout, o.HgTimeout)
	set(&out.S3Timeout, o.S3Timeout)
	if o.HTTPMaxSize != nil {
		out.HTTPMaxSize = o.HTTPMaxSize
	}
	if o.DecompressionSizeLimit != nil {
		out.DecompressionSizeLimit = o.DecompressionSizeLimit
	}
	if o.DecompressionFileCountLimit != nil {
		out.DecompressionFileCountLimit = o.DecompressionFileCountLimit
	}
	if o.DisableFilesystemIsolation != nil {
		out.DisableFilesystemIsolation = o.DisableFilesystemIsolation
	}
	if o.SetEnvironmentVariables != nil {
		out.SetEnvironmentVariables = o.SetEnvironmentVariables
	}
	return out
}

// byteUnits are the size suffixes ParseBytes knows, lower case: SI ones
// (KB = 1000) and binary ones (KiB = 1024), as Nomad reads them.
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12, "p": 1e15, "pb": 1e15,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30,
	"ti": 1 << 40, "tib": 1 << 40, "pi": 1 << 50, "pib": 1 << 50,
}

// ParseBytes reads a size such as "100GB", "512 MiB" or "1024".
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	f, err := strconv.ParseFloat(num, 64)
	mult, known := byteUnits[unit]
	if err != nil || !known || f < 0 || f*mult > math.MaxInt64 {
		return 0, fmt.Errorf("must be a size such as \"100GB\" or \"512MiB\", got %q", s)
	}
	return int64(f * mult), nil
}

// copy returns a deep copy of a (nil for nil).
func (a *ArtifactConfig) copy() *ArtifactConfig {
	if a == nil {
		return nil
	}
	return &ArtifactConfig{
		HTTPReadTimeout: clonePtr(a.HTTPReadTimeout), HTTPMaxSize: clonePtr(a.HTTPMaxSize),
		GCSTimeout: clonePtr(a.GCSTimeout), GitTimeout: clonePtr(a.GitTimeout),
		HgTimeout: clonePtr(a.HgTimeout), S3Timeout: clonePtr(a.S3Timeout),
		DecompressionSizeLimit:      clonePtr(a.DecompressionSizeLimit),
		DecompressionFileCountLimit: clonePtr(a.DecompressionFileCountLimit),
		DisableFilesystemIsolation:  clonePtr(a.DisableFilesystemIsolation),
		SetEnvironmentVariables:     clonePtr(a.SetEnvironmentVariables),
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
