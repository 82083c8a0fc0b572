package docker

import (
	"errors"
	"fmt"
	"sort"
)

// unsupportedKeys are the task config keys of Nomad's docker driver that
// Drover's does not carry out, with why: a job that sets one is refused
// (at registration, since the server runs ValidateTaskConfig) rather than
// run without it.
var unsupportedKeys = map[string]string{
	"advertise_ipv6_address":    "services are advertised at the node's address",
	"container_exists_attempts": "a left-over container of the task is removed at once",
	"ipv4_address":              "user-defined Docker networks are not managed by Drover",
	"ipv6_address":              "user-defined Docker networks are not managed by Drover",
	"isolation":                 "it is a Windows option and Drover runs Linux containers",
	"network_aliases":           "user-defined Docker networks are not managed by Drover",
	"volume_driver":             "Docker volume drivers are not supported; use mount blocks of type volume",
}

// UnsupportedError is a key of Nomad's docker driver that Drover's does
// not carry out:
//
//	ipv4_address is not supported by Drover's docker driver yet: user-defined Docker networks are not managed by Drover
type UnsupportedError struct {
	Field  string
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s is not supported by Drover's docker driver yet: %s", e.Field, e.Reason)
}

// checkUnsupported returns an *UnsupportedError for each key of m listed in
// known, joined in key order; prefix is put before the field name
// ("mount[0].").
func checkUnsupported(m map[string]any, known map[string]string, prefix string) error {
	var keys []string
	for k := range m {
		if _, ok := known[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		errs = append(errs, &UnsupportedError{Field: prefix + k, Reason: known[k]})
	}
	return errors.Join(errs...)
}

// withoutKeys returns m less the keys of known (so that CheckFields does
// not also call them unknown).
func withoutKeys(m map[string]any, known map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if _, ok := known[k]; !ok {
			out[k] = v
		}
	}
	return out
}
