package drivers

import (
	"errors"
	"maps"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// PrefetchKey is the task config key ("prefetch = false") that turns
// prefetch before kill off for a task, on every driver. The client's task
// runner consumes it, so a driver never sees it.
const PrefetchKey = "prefetch"

// validators holds one driver of each registered name, built with its
// default plugin config, for ValidateSubmitted.
var validators = struct {
	sync.Mutex
	byName map[string]Driver
}{byName: map[string]Driver{}}

// ValidateSubmitted checks a submitted task's config block against the
// schema of the registered driver name: the driver's own ValidateTaskConfig,
// the code the client runs before it starts the task, with the driver's
// default plugin config. known is false when no driver of that name is
// linked (the job may still run on a node that has one: placement says
// "missing drivers").
//
// Two things are the node's to decide and are not refused here: the value
// of a field that contains a ${...} interpolation (its value exists only on
// the node; an unknown key is refused whatever its value), and the plugin options of a client (what its plugin config
// allows, e.g. Docker's volumes or privileged mode). The prefetch key is
// every driver's and is checked here (a bool).
func ValidateSubmitted(name string, config map[string]any) (known bool, err error) {
	d := validator(name)
	if d == nil {
		return false, nil
	}
	if _, _, err := ConfigBool(config, PrefetchKey); err != nil {
		return true, err
	}
	config = maps.Clone(config)
	delete(config, PrefetchKey)
	err = d.ValidateTaskConfig(config)
	return true, withoutInterpolated(err, config)
}

// ResourceValidator is a driver whose task config is also checked against
// the task's resources at submission (Docker's memory_hard_limit must not
// be below the task's memory).
type ResourceValidator interface {
	// ValidateTaskResources checks config, a config ValidateTaskConfig
	// accepts, against the task's memory and memory_max (MB, 0: unset).
	ValidateTaskResources(config map[string]any, memoryMB, memoryMaxMB int) error
}

// ValidateSubmittedResources is ValidateSubmitted's check of a task's
// config against its resources, for drivers that have one
// (ResourceValidator); a field whose value is interpolated is the node's
// to check.
func ValidateSubmittedResources(name string, config map[string]any, memoryMB, memoryMaxMB int) error {
	rv, ok := validator(name).(ResourceValidator)
	if !ok {
		return nil
	}
	config = maps.Clone(config)
	delete(config, PrefetchKey)
	return withoutInterpolated(rv.ValidateTaskResources(config, memoryMB, memoryMaxMB), config)
}

func validator(name string) Driver {
	validators.Lock()
	defer validators.Unlock()
	if d, ok := validators.byName[name]; ok {
		return d
	}
	factoriesMu.RLock()
	f, ok := factories[name]
	factoriesMu.RUnlock()
	var d Driver
	if ok {
		d = f(hclog.NewNullLogger())
	}
	validators.byName[name] = d
	return d
}

// withoutInterpolated drops the FieldErrors of err whose field's value in
// config holds a ${...} reference; other errors stay, and so do problems
// with a key itself (FieldError.Key: an unknown option is unknown whatever
// its value).
func withoutInterpolated(err error, config map[string]any) error {
	if err == nil {
		return nil
	}
	var kept []error
	for _, e := range flatten(err) {
		var fe *FieldError
		if errors.As(e, &fe) && !fe.Key && interpolated(config[topField(fe.Field)]) {
			continue
		}
		kept = append(kept, e)
	}
	return errors.Join(kept...)
}

// flatten unwraps errors.Join trees into their leaves.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// topField is the config key a field name starts with ("mount[0].source",
// "auth.username" → "mount", "auth").
func topField(field string) string {
	if i := strings.IndexAny(field, ".["); i >= 0 {
		return field[:i]
	}
	return field
}

// interpolated reports whether v, or anything inside it, is a string with
// a ${...} reference.
func interpolated(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "${")
	case []any:
		for _, x := range t {
			if interpolated(x) {
				return true
			}
		}
	case []map[string]any:
		for _, x := range t {
			if interpolated(x) {
				return true
			}
		}
	case map[string]any:
		for _, x := range t {
			if interpolated(x) {
				return true
			}
		}
	}
	return false
}
