package jobspec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/nomad/api"
)

// parseJSON decodes a JSON job: {"Job": {...}} (as printed by `job run
// -output` / `job inspect`) or a bare api.Job object. Unknown fields are
// ignored, like the Nomad HTTP API does.
func parseJSON(path string, src []byte) (*api.Job, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(src, &probe); err != nil {
		return nil, jsonError(path, src, err)
	}
	if _, wrapped := probe["Job"]; wrapped {
		var w struct{ Job *api.Job }
		if err := json.Unmarshal(src, &w); err != nil {
			return nil, jsonError(path, src, err)
		}
		if w.Job == nil {
			return nil, fmt.Errorf("%s: \"Job\" is null", path)
		}
		return w.Job, nil
	}
	job := &api.Job{}
	if err := json.Unmarshal(src, job); err != nil {
		return nil, jsonError(path, src, err)
	}
	return job, nil
}

// jsonError adds a "path:line,col" position to JSON syntax and type errors.
func jsonError(path string, src []byte, err error) error {
	var offset int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	}
	if offset < 0 || offset > int64(len(src)) {
		return fmt.Errorf("%s: invalid JSON job: %w", path, err)
	}
	// Offsets count the bytes read, including the offending one; point at it.
	pos := offsetPos(src, int(max(offset-1, 0)))
	rng := hcl.Range{Filename: path, Start: pos, End: pos}
	return diagsToError(hcl.Diagnostics{errDiag(&rng, "Invalid JSON job", err.Error())})
}

// offsetPos converts a byte offset into a 1-based line/column position.
func offsetPos(src []byte, offset int) hcl.Pos {
	before := src[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := offset - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return hcl.Pos{Line: line, Column: col, Byte: offset}
}
