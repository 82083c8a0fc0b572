package getter

import "time"

// Config is the client's artifact {} block, with Nomad's defaults from
// DefaultConfig.
type Config struct {
	// HTTPReadTimeout bounds one http(s) download, request and body.
	HTTPReadTimeout time.Duration
	// HTTPMaxSize is the largest http(s) response body accepted, in bytes.
	HTTPMaxSize int64
	// GitTimeout bounds each git command of a git download.
	GitTimeout time.Duration
	// GCSTimeout, HgTimeout and S3Timeout are kept for configuration files
	// written for Nomad; those getters are not offered.
	GCSTimeout, HgTimeout, S3Timeout time.Duration
	// DecompressionSizeLimit bounds the total size of the files unpacked
	// from one archive, in bytes, and DecompressionFileCountLimit their
	// number; 0 means no limit.
	DecompressionSizeLimit      int64
	DecompressionFileCountLimit int
	// DisableFilesystemIsolation lets file sources read anywhere on the
	// host; otherwise they must lie inside the allocation directory.
	DisableFilesystemIsolation bool
	// SetEnvironmentVariables names the agent's environment variables git
	// is given. The git getter runs as a child of the agent and sees the
	// agent's environment, so the listed ones are always there.
	SetEnvironmentVariables []string
}

// Defaults, as in Nomad.
const (
	DefaultHTTPReadTimeout             = 30 * time.Minute
	DefaultHTTPMaxSize                 = 100_000_000_000 // "100GB"
	DefaultTimeout                     = 30 * time.Minute
	DefaultDecompressionSizeLimit      = 100_000_000_000 // "100GB"
	DefaultDecompressionFileCountLimit = 4096
)

// DefaultConfig returns Nomad's defaults.
func DefaultConfig() *Config {
	return &Config{
		HTTPReadTimeout:             DefaultHTTPReadTimeout,
		HTTPMaxSize:                 DefaultHTTPMaxSize,
		GitTimeout:                  DefaultTimeout,
		GCSTimeout:                  DefaultTimeout,
		HgTimeout:                   DefaultTimeout,
		S3Timeout:                   DefaultTimeout,
		DecompressionSizeLimit:      DefaultDecompressionSizeLimit,
		DecompressionFileCountLimit: DefaultDecompressionFileCountLimit,
	}
}
