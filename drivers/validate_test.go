package drivers

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWithoutInterpolated(t *testing.T) {
	config := map[string]any{
		"port":    "${NOMAD_PORT_http}",
		"mount":   []any{map[string]any{"source": "${NOMAD_ALLOC_DIR}/x"}},
		"count":   "three",
		"hostnam": "agent-${NOMAD_ALLOC_INDEX}",
	}
	err := errors.Join(
		&FieldError{Field: "port", Rule: "must be an integer"},
		&FieldError{Field: "mount[0].source", Rule: "must be absolute"},
		&FieldError{Field: "count", Rule: "must be an integer"},
		errors.New("a whole-config problem"),
		&FieldError{Field: "hostnam", Rule: "is not a known option", Key: true},
	)
	got := withoutInterpolated(err, config)
	require.EqualError(t, got, "count must be an integer\na whole-config problem\nhostnam is not a known option",
		"an unknown key is refused whatever its value interpolates to")
	require.NoError(t, withoutInterpolated(errors.Join(&FieldError{Field: "port", Rule: "x"}), config))
	require.NoError(t, withoutInterpolated(nil, config))
}

func TestValidateSubmitted_UnknownDriver(t *testing.T) {
	known, err := ValidateSubmitted("no-such-driver", map[string]any{"x": 1})
	require.False(t, known)
	require.NoError(t, err)
}
