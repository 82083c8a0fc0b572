package structs

import (
	"errors"
	"fmt"
)

// Error kinds the HTTP layer maps to status codes with errors.Is.
var (
	// ErrBadRequest marks invalid input (HTTP 400).
	ErrBadRequest = errors.New("bad request")
	// ErrNotFound marks a missing object (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrConflict marks a request that contradicts current state, such as a
	// failed check-index (HTTP 409 would break the Nomad CLI, which expects
	// these as 400s; the HTTP layer maps it to 400).
	ErrConflict = errors.New("conflict")
)

// RequestError is an error whose message is shown to the API client as is.
type RequestError struct {
	Kind error  // ErrBadRequest, ErrNotFound or ErrConflict
	Msg  string // client-facing text
}

func (e *RequestError) Error() string { return e.Msg }

// Unwrap returns the error's kind.
func (e *RequestError) Unwrap() error { return e.Kind }

// BadRequestf returns a RequestError of kind ErrBadRequest.
func BadRequestf(format string, args ...any) error {
	return &RequestError{Kind: ErrBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// NotFoundf returns a RequestError of kind ErrNotFound.
func NotFoundf(format string, args ...any) error {
	return &RequestError{Kind: ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}
