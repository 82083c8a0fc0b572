package drivers

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Factory builds a driver with its default configuration.
type Factory func(logger hclog.Logger) Driver

var (
	factoriesMu sync.RWMutex
	factories   = map[string]Factory{}
)

// Register makes a driver available to NewCatalog under name. Driver
// packages call it from init (importing drivers/builtin links them all). It
// panics if name is registered twice.
func Register(name string, f Factory) {
	factoriesMu.Lock()
	defer factoriesMu.Unlock()
	if _, dup := factories[name]; dup {
		panic("drivers: driver " + name + " registered twice")
	}
	factories[name] = f
}

// Registered returns the names of the registered drivers, sorted.
func Registered() []string {
	factoriesMu.RLock()
	defer factoriesMu.RUnlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Catalog is the set of drivers of a client, by name.
type Catalog map[string]Driver

// NewCatalog builds every registered driver (docker, raw_exec and mock once their
// packages are linked; see drivers/builtin) and applies its plugin config
// from plugins[name] (the agent's plugin "NAME" { config {...} } blocks).
// A driver whose config is rejected is left out of the catalog and the error
// is logged; use BuildCatalog to fail instead.
func NewCatalog(logger hclog.Logger, plugins map[string]map[string]any) Catalog {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	c, err := buildCatalog(logger, plugins)
	if err != nil {
		logger.Error("invalid driver plugin config; driver left out", "error", err)
	}
	return c
}

// BuildCatalog is NewCatalog returning an error (listing every rejected
// plugin config) instead of leaving drivers out silently. The catalog holds
// the drivers that were configured successfully.
func BuildCatalog(logger hclog.Logger, plugins map[string]map[string]any) (Catalog, error) {
	return buildCatalog(logger, plugins)
}

func buildCatalog(logger hclog.Logger, plugins map[string]map[string]any) (Catalog, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	factoriesMu.RLock()
	defer factoriesMu.RUnlock()
	var errs []error
	c := make(Catalog, len(factories))
	for name, f := range factories {
		d := f(logger.Named(name))
		if cfg, ok := plugins[name]; ok {
			if err := d.SetConfig(cfg); err != nil {
				errs = append(errs, fmt.Errorf("plugin %q: %w", name, err))
				continue
			}
		}
		c[name] = d
	}
	for name := range plugins {
		if _, ok := factories[name]; !ok {
			logger.Warn("plugin config for an unknown driver ignored", "driver", name)
		}
	}
	return c, errors.Join(errs...)
}

// Get returns the named driver; the error wraps ErrDriverNotFound.
func (c Catalog) Get(name string) (Driver, error) {
	if d, ok := c[name]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrDriverNotFound, name)
}

// Names returns the driver names, sorted.
func (c Catalog) Names() []string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
