package taskrunner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/drivers/logrotate"
	"github.com/drover-project/drover/nomad/structs"
)

func TestLogLimits(t *testing.T) {
	tests := []struct {
		name         string
		lc           *structs.LogConfig
		want         logrotate.Limits
		wantDisabled bool
	}{
		{"no logs block", nil, logrotate.Limits{MaxFiles: 10, MaxFileSize: 10 * logrotate.MB}, false},
		{"set", &structs.LogConfig{MaxFiles: 3, MaxFileSizeMB: 1}, logrotate.Limits{MaxFiles: 3, MaxFileSize: logrotate.MB}, false},
		{"disabled", &structs.LogConfig{MaxFiles: 10, MaxFileSizeMB: 10, Disabled: true}, logrotate.Limits{MaxFiles: 10, MaxFileSize: 10 * logrotate.MB}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, disabled := logLimits(tt.lc)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.wantDisabled, disabled)
		})
	}
}
