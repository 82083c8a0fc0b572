package structs

import (
	"fmt"
	"sort"
	"strings"
)

// DroverMetaPrefix starts the group meta keys that carry Drover's rollout
// extensions: the official CLI refuses unknown fields in update {}, so a
// job file the CLI submits unchanged asks for them in group meta. Like all
// meta they also reach the task environment.
const DroverMetaPrefix = "drover."

// droverMetaKey is one known extension key: check validates a value for
// group tg of a job of type jobType and returns problems in the key's own
// words (the caller prefixes the key).
type droverMetaKey struct {
	check func(value string, tg *TaskGroup, jobType string) []string
}

// droverMetaKeys holds every known key; each feature registers its own
// keys from its file's init (RegisterDroverMetaKey).
var droverMetaKeys = map[string]droverMetaKey{}

// RegisterDroverMetaKey makes key (with DroverMetaPrefix) a known group
// meta key validated by check at registration. It panics on a duplicate:
// keys are registered once, from init.
func RegisterDroverMetaKey(key string, check func(value string, tg *TaskGroup, jobType string) []string) {
	if !strings.HasPrefix(key, DroverMetaPrefix) {
		panic("drover meta key without the drover. prefix: " + key)
	}
	if _, dup := droverMetaKeys[key]; dup {
		panic("drover meta key registered twice: " + key)
	}
	droverMetaKeys[key] = droverMetaKey{check: check}
}

// validateDroverMeta checks the group's drover.* meta keys: an unknown key
// is refused (a typo would otherwise be a rollout that silently ignores
// what was asked), a known one by its own check.
func (tg *TaskGroup) validateDroverMeta(p *problems, jobType string) {
	keys := make([]string, 0, len(tg.Meta))
	for k := range tg.Meta {
		if strings.HasPrefix(k, DroverMetaPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		known, ok := droverMetaKeys[k]
		if !ok {
			p.addf("meta %q: unknown Drover key (known: %s)", k, knownDroverMetaKeys())
			continue
		}
		p.addAll(fmt.Sprintf("meta %q: ", k), known.check(tg.Meta[k], tg, jobType))
	}
}

func knownDroverMetaKeys() string {
	if len(droverMetaKeys) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(droverMetaKeys))
	for k := range droverMetaKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
