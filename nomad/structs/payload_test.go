package structs

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPayloadCompression(t *testing.T) {
	for name, raw := range map[string][]byte{
		"text":           bytes.Repeat([]byte("name=castle\n"), 1000),
		"incompressible": randomBytes(t, DispatchPayloadSizeLimit),
		"one byte":       {0},
	} {
		t.Run(name, func(t *testing.T) {
			packed, err := CompressPayload(raw)
			require.NoError(t, err)
			j := &Job{ID: "j", Payload: packed, PayloadEncoding: PayloadEncodingDeflate}
			got, err := j.DecodedPayload()
			require.NoError(t, err)
			require.Equal(t, raw, got)
			var p problems
			j.validatePayload(&p)
			require.Empty(t, p, "the limit applies to the payload as dispatched, not its stored form")
		})
	}
	raw := []byte("plain")
	got, err := (&Job{Payload: raw}).DecodedPayload()
	require.NoError(t, err)
	require.Equal(t, raw, got, "a raw payload (no encoding) reads as is")

	_, err = (&Job{ID: "j", Payload: raw, PayloadEncoding: "zstd"}).DecodedPayload()
	require.ErrorContains(t, err, `unknown payload encoding "zstd"`)

	big, err := CompressPayload(make([]byte, DispatchPayloadSizeLimit+1))
	require.NoError(t, err)
	var p problems
	(&Job{ID: "j", Payload: big, PayloadEncoding: PayloadEncodingDeflate}).validatePayload(&p)
	require.Equal(t, problems{"Payload exceeds maximum size; 16385 > 16384"}, p)
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}
