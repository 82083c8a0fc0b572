package imageresolve

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Defaults of the auto-update settings.
const (
	DefaultAutoUpdateInterval = 10 * time.Minute
	// MinAutoUpdateInterval is the shortest interval accepted; short enough
	// for tests, long enough that a typo ("1ms") cannot hammer a registry.
	MinAutoUpdateInterval = time.Second
)

// Settings are the image settings of one Docker task's config block.
type Settings struct {
	// PinDigest (pin_digest, default true) pins the image's tag to its
	// digest at registration. false keeps the image as written, for images
	// that exist only on the nodes.
	PinDigest bool
	// AutoUpdate (auto_update, default false) makes the image watcher
	// follow the tag: with true it rolls the tag's new digests out as new
	// job versions; with "notify" (Notify) it only reports them (status,
	// event stream, metric) and never rolls.
	AutoUpdate bool
	Notify     bool
	// Window (auto_update_window) limits rolls to the windows (see
	// Window for the syntax); empty means any time.
	Window Windows
	// Approval (auto_update_approval, default false) holds a new digest
	// until an operator approves it (drover job image-updates -approve).
	Approval bool
	// MinAge (auto_update_min_age, default 0) is the least age of the
	// image (its config's "created" time) before it rolls.
	MinAge time.Duration
	// Interval (auto_update_interval, default 10m, at least 1s) is how often
	// the tag is checked.
	Interval time.Duration
	// Soak (auto_update_soak, default 0) is how long a new digest must stay
	// the tag's answer before it rolls.
	Soak time.Duration
	// Auth is the task's auth block, or nil.
	Auth *Auth
}

// ParseSettings reads a Docker task's image settings from its config block.
// Errors name the field and the rule.
func ParseSettings(cfg map[string]any) (Settings, error) {
	s := Settings{PinDigest: true, Interval: DefaultAutoUpdateInterval}
	var errs []error
	if b, ok, err := configBool(cfg, "pin_digest"); err != nil {
		errs = append(errs, err)
	} else if ok {
		s.PinDigest = b
	}
	if v, ok := cfg["auto_update"].(string); ok && strings.EqualFold(v, "notify") {
		s.AutoUpdate, s.Notify = true, true
	} else if b, ok, err := configBool(cfg, "auto_update"); err != nil {
		errs = append(errs, fmt.Errorf(`auto_update must be true, false or "notify", got %T %v`, cfg["auto_update"], cfg["auto_update"]))
	} else if ok {
		s.AutoUpdate = b
	}
	if b, ok, err := configBool(cfg, "auto_update_approval"); err != nil {
		errs = append(errs, err)
	} else if ok {
		s.Approval = b
	}
	if d, ok, err := configDuration(cfg, "auto_update_min_age"); err != nil {
		errs = append(errs, err)
	} else if ok {
		s.MinAge = d
	}
	if w, err := ParseWindows(cfg["auto_update_window"]); err != nil {
		errs = append(errs, err)
	} else {
		s.Window = w
	}
	for _, k := range []string{"auto_update_window", "auto_update_approval", "auto_update_min_age"} {
		if _, set := cfg[k]; set && !s.AutoUpdate && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("%s is set but auto_update is not (set auto_update = true or \"notify\")", k))
		}
	}
	if s.Notify && (s.Approval || len(s.Window) > 0) {
		errs = append(errs, errors.New(`auto_update = "notify" never rolls: auto_update_approval and auto_update_window do not apply (use auto_update = true with them)`))
	}
	if d, ok, err := configDuration(cfg, "auto_update_interval"); err != nil {
		errs = append(errs, err)
	} else if ok {
		if d < MinAutoUpdateInterval {
			errs = append(errs, fmt.Errorf("auto_update_interval must be at least %s, got %s", MinAutoUpdateInterval, d))
		} else {
			s.Interval = d
		}
	}
	if d, ok, err := configDuration(cfg, "auto_update_soak"); err != nil {
		errs = append(errs, err)
	} else if ok {
		s.Soak = d
	}
	if s.AutoUpdate && !s.PinDigest {
		errs = append(errs, errors.New("auto_update requires pin_digest (auto_update = true with pin_digest = false)"))
	}
	a, err := parseAuth(cfg["auth"])
	if err != nil {
		errs = append(errs, err)
	}
	s.Auth = a
	return s, errors.Join(errs...)
}

func configBool(cfg map[string]any, key string) (bool, bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return false, false, nil
	}
	switch t := v.(type) {
	case bool:
		return t, true, nil
	case string:
		switch strings.ToLower(t) {
		case "true", "1":
			return true, true, nil
		case "false", "0":
			return false, true, nil
		}
	}
	return false, false, fmt.Errorf("%s must be a bool, got %T %v", key, v, v)
}

func configDuration(cfg map[string]any, key string) (time.Duration, bool, error) {
	v, ok := cfg[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	var d time.Duration
	switch t := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			return 0, false, fmt.Errorf("%s must be a duration such as \"10m\": %v", key, err)
		}
	case int:
		d = time.Duration(t)
	case int64:
		d = time.Duration(t)
	case uint64:
		d = time.Duration(t)
	case float64:
		d = time.Duration(t)
	default:
		return 0, false, fmt.Errorf("%s must be a duration such as \"10m\", got %T", key, v)
	}
	if d < 0 {
		return 0, false, fmt.Errorf("%s must not be negative, got %s", key, d)
	}
	return d, true, nil
}

// parseAuth reads the auth block: one object, or a list of one (HCL).
func parseAuth(v any) (*Auth, error) {
	var m map[string]any
	switch t := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		m = t
	case []map[string]any:
		if len(t) == 0 {
			return nil, nil
		}
		m = t[0]
	case []any:
		if len(t) == 0 {
			return nil, nil
		}
		mm, ok := t[0].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("auth must be a block (object), got %T", t[0])
		}
		m = mm
	default:
		return nil, fmt.Errorf("auth must be a block (object), got %T", v)
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	return &Auth{Username: str("username"), Password: str("password"),
		IdentityToken: str("identity_token"), ServerAddress: str("server_address")}, nil
}
