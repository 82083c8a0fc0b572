package structs

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
)

// PayloadEncodingDeflate marks a job Payload compressed with DEFLATE (RFC
// 1951, the standard library's compress/flate).
const PayloadEncodingDeflate = "deflate"

// CompressPayload returns the DEFLATE form of a dispatch payload, as stored
// in the state store and the raft log (Job.Payload with
// PayloadEncoding = PayloadEncodingDeflate).
func CompressPayload(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodedPayload returns the job's dispatch payload as it was dispatched,
// whatever its stored encoding. It reads at most DispatchPayloadSizeLimit+1
// bytes, so a corrupt or hostile stored form cannot make it allocate more.
func (j *Job) DecodedPayload() ([]byte, error) {
	switch j.PayloadEncoding {
	case "":
		return j.Payload, nil
	case PayloadEncodingDeflate:
		r := flate.NewReader(bytes.NewReader(j.Payload))
		defer r.Close()
		out, err := io.ReadAll(io.LimitReader(r, DispatchPayloadSizeLimit+1))
		if err != nil {
			return nil, fmt.Errorf("decompressing the dispatch payload of job %q: %w", j.ID, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("job %q: unknown payload encoding %q", j.ID, j.PayloadEncoding)
	}
}
