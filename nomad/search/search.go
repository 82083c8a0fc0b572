package search

import (
	"fmt"
	"sort"
	"strings"

	"github.com/drover-project/drover/nomad/state"
	"github.com/drover-project/drover/nomad/structs"
)

// Contexts (Nomad's names) Drover searches. Others are accepted and match
// nothing.
const (
	Allocs      = "allocs"
	Deployments = "deployment"
	Evals       = "evals"
	Jobs        = "jobs"
	Nodes       = "nodes"
	NodePools   = "node_pools"
	Namespaces  = "namespaces"
	Groups      = "groups"
	Services    = "services"
	Tasks       = "tasks"
	Images      = "images"
	Commands    = "commands"
	Classes     = "classes"
	All         = "all"
)

// Limit is the most matches returned per context; more set the context's
// truncation flag.
const Limit = 20

// knownContexts are every context name Nomad defines; a request naming
// another is bad input.
var knownContexts = map[string]bool{
	Allocs: true, Deployments: true, Evals: true, Jobs: true, Nodes: true, NodePools: true,
	Namespaces: true, "quotas": true, "recommendations": true, "scaling_policy": true,
	"plugins": true, "vars": true, "volumes": true, "host_volumes": true,
	Groups: true, Services: true, Tasks: true, Images: true, Commands: true, Classes: true, All: true,
}

// ValidContext reports whether ctx names a context ("" is not one).
func ValidContext(ctx string) bool { return knownContexts[ctx] }

// Scope is what reading the objects of a context needs.
type Scope int

const (
	// ScopeNone: a context Drover has no objects for (it matches nothing).
	ScopeNone Scope = iota
	// ScopeJobs: reading jobs in their namespace (jobs and what they hold:
	// groups, tasks, services, images, commands, classes, evaluations,
	// allocations, deployments).
	ScopeJobs
	// ScopeNodes: reading nodes (nodes and node pools).
	ScopeNodes
	// ScopeNamespaces: any capability in the namespace named.
	ScopeNamespaces
)

// ScopeOf returns what reading ctx's objects needs ("all": ScopeNone, as
// it spans the others).
func ScopeOf(ctx string) Scope {
	switch ctx {
	case Jobs, Groups, Services, Tasks, Images, Commands, Classes, Evals, Allocs, Deployments:
		return ScopeJobs
	case Nodes, NodePools:
		return ScopeNodes
	case Namespaces:
		return ScopeNamespaces
	}
	return ScopeNone
}

// Access is what a search may return; a nil *Access allows everything.
// With "all", a context whose scope is denied is left out of the answer;
// within a context, objects of a namespace JobNamespace denies and
// namespaces Namespace denies are left out.
type Access struct {
	// Jobs: jobs may be read in the searched namespace ("*": in some).
	Jobs bool
	// JobNamespace reports whether jobs (and what they hold) of namespace
	// ns may be returned.
	JobNamespace func(ns string) bool
	// Nodes: nodes and node pools may be read.
	Nodes bool
	// Namespace reports whether namespace ns may be named.
	Namespace func(ns string) bool
}

// context reports whether ctx's objects may be searched at all.
func (a *Access) context(ctx string) bool {
	if a == nil {
		return true
	}
	switch ScopeOf(ctx) {
	case ScopeJobs:
		return a.Jobs
	case ScopeNodes:
		return a.Nodes
	}
	return true
}

// jobNS reports whether objects of namespace ns may be returned.
func (a *Access) jobNS(ns string) bool {
	return a == nil || a.JobNamespace == nil || a.JobNamespace(nsOf(ns))
}

// namespace reports whether namespace ns may be named.
func (a *Access) namespace(ns string) bool {
	return a == nil || a.Namespace == nil || a.Namespace(ns)
}

// expand returns the contexts a search of ctx reads: ctx itself, or for
// "all" those of all that access allows.
func (a *Access) expand(ctx string, all []string) []string {
	if ctx != All {
		return []string{ctx}
	}
	out := make([]string, 0, len(all))
	for _, c := range all {
		if a.context(c) {
			out = append(out, c)
		}
	}
	return out
}

// prefixContexts are the contexts "all" expands to in a prefix search.
var prefixContexts = []string{Allocs, Deployments, Evals, Jobs, Nodes, NodePools, Namespaces}

// fuzzyContexts are the contexts "all" expands to in a fuzzy search.
var fuzzyContexts = []string{Jobs, Groups, Tasks, Services, Images, Commands, Classes, Nodes, NodePools, Namespaces, Allocs}

// Prefix returns, per context, up to Limit IDs (names for node pools and
// namespaces) that start with prefix, sorted, and which contexts had
// more. Namespaced objects are searched in ns ("*": all), and only what
// access allows is returned (see Access).
func Prefix(snap *state.Snapshot, access *Access, ns, prefix, ctx string) (map[string][]string, map[string]bool, error) {
	ctxs := access.expand(ctx, prefixContexts)
	matches, trunc := map[string][]string{}, map[string]bool{}
	for _, c := range ctxs {
		ids, err := prefixIDs(snap, access, ns, prefix, c)
		if err != nil {
			return nil, nil, err
		}
		sort.Strings(ids)
		if len(ids) > Limit {
			ids, trunc[c] = ids[:Limit], true
		} else {
			trunc[c] = false
		}
		matches[c] = ids
	}
	return matches, trunc, nil
}

func prefixIDs(snap *state.Snapshot, access *Access, ns, prefix, ctx string) ([]string, error) {
	ids := []string{}
	add := func(id string) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if !access.context(ctx) {
		return ids, nil
	}
	switch ctx {
	case Jobs:
		jobs, err := snap.Jobs(nil, ns)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if access.jobNS(j.Namespace) {
				add(j.ID)
			}
		}
	case Evals:
		evals, err := snap.Evals(nil, ns)
		if err != nil {
			return nil, err
		}
		for _, e := range evals {
			if access.jobNS(e.Namespace) {
				add(e.ID)
			}
		}
	case Allocs:
		allocs, err := snap.Allocs(nil)
		if err != nil {
			return nil, err
		}
		for _, a := range allocs {
			if nsMatch(ns, a.Namespace) && access.jobNS(a.Namespace) {
				add(a.ID)
			}
		}
	case Deployments:
		ds, err := snap.Deployments(nil, ns)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			if access.jobNS(d.Namespace) {
				add(d.ID)
			}
		}
	case Nodes:
		nodes, err := snap.Nodes(nil)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			add(n.ID)
		}
	case NodePools:
		pools, err := snap.NodePools(nil, prefix)
		if err != nil {
			return nil, err
		}
		for _, p := range pools {
			ids = append(ids, p.Name)
		}
	case Namespaces:
		if access.namespace(structs.DefaultNamespace) {
			add(structs.DefaultNamespace)
		}
	}
	return ids, nil
}

func nsMatch(want, have string) bool {
	if have == "" {
		have = structs.DefaultNamespace
	}
	return want == "*" || want == have
}

// Match is a fuzzy match: the matched text and where it was found
// (namespace, job, group, task as they apply; a node's ID).
type Match struct {
	ID    string
	Scope []string
}

// MinFuzzyLength is the shortest text a fuzzy search accepts.
const MinFuzzyLength = 2

// Fuzzy returns, per context, up to Limit matches whose text contains
// text, case-insensitively; matches nearer the start of their text come
// first, then alphabetically. Only what access allows is returned (see
// Access).
func Fuzzy(snap *state.Snapshot, access *Access, ns, text, ctx string) (map[string][]Match, map[string]bool, error) {
	if len(text) < MinFuzzyLength {
		return nil, nil, fmt.Errorf("fuzzy search query must be at least %d characters, got %d", MinFuzzyLength, len(text))
	}
	ctxs := access.expand(ctx, fuzzyContexts)
	f := &fuzzy{text: strings.ToLower(text), found: map[string][]scored{}, access: access}
	for _, c := range ctxs {
		if err := f.search(snap, ns, c); err != nil {
			return nil, nil, err
		}
	}
	matches, trunc := map[string][]Match{}, map[string]bool{}
	for _, c := range ctxs {
		list := f.found[c]
		sort.SliceStable(list, func(i, j int) bool {
			if list[i].pos != list[j].pos {
				return list[i].pos < list[j].pos
			}
			return list[i].m.ID < list[j].m.ID
		})
		out := make([]Match, 0, min(len(list), Limit))
		for i, s := range list {
			if i == Limit {
				break
			}
			out = append(out, s.m)
		}
		matches[c], trunc[c] = out, len(list) > Limit
	}
	return matches, trunc, nil
}

type scored struct {
	m   Match
	pos int // where text was found
}

type fuzzy struct {
	text   string
	found  map[string][]scored
	seen   map[string]bool
	access *Access
}

// try records s in ctx when it contains the text; the same (ctx, s,
// scope) is recorded once.
func (f *fuzzy) try(ctx, s string, scope ...string) {
	pos := strings.Index(strings.ToLower(s), f.text)
	if pos < 0 {
		return
	}
	key := ctx + "\x00" + s + "\x00" + strings.Join(scope, "\x00")
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	if f.seen[key] {
		return
	}
	f.seen[key] = true
	f.found[ctx] = append(f.found[ctx], scored{m: Match{ID: s, Scope: scope}, pos: pos})
}

func (f *fuzzy) search(snap *state.Snapshot, ns, ctx string) error {
	if !f.access.context(ctx) {
		return nil
	}
	switch ctx {
	case Jobs, Groups, Tasks, Services, Images, Commands, Classes:
		jobs, err := snap.Jobs(nil, ns)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if f.access.jobNS(j.Namespace) {
				f.job(j, ctx)
			}
		}
	case Nodes:
		nodes, err := snap.Nodes(nil)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			f.try(ctx, n.Name, n.ID)
		}
	case NodePools:
		pools, err := snap.NodePools(nil, "")
		if err != nil {
			return err
		}
		for _, p := range pools {
			f.try(ctx, p.Name)
		}
	case Namespaces:
		if f.access.namespace(structs.DefaultNamespace) {
			f.try(ctx, structs.DefaultNamespace)
		}
	case Allocs:
		allocs, err := snap.Allocs(nil)
		if err != nil {
			return err
		}
		for _, a := range allocs {
			if nsMatch(ns, a.Namespace) && f.access.jobNS(a.Namespace) {
				f.try(ctx, a.Name, nsOf(a.Namespace), a.ID)
			}
		}
	}
	return nil
}

func nsOf(ns string) string {
	if ns == "" {
		return structs.DefaultNamespace
	}
	return ns
}

// job searches one job's names, services, images, commands and classes.
func (f *fuzzy) job(j *structs.Job, ctx string) {
	ns := nsOf(j.Namespace)
	if ctx == Jobs {
		f.try(ctx, j.Name, ns, j.ID)
		return
	}
	for _, tg := range j.TaskGroups {
		switch ctx {
		case Groups:
			f.try(ctx, tg.Name, ns, j.ID)
		case Services:
			for _, s := range tg.Services {
				f.try(ctx, s.Name, ns, j.ID, tg.Name)
			}
		}
		for _, t := range tg.Tasks {
			switch ctx {
			case Tasks:
				f.try(ctx, t.Name, ns, j.ID, tg.Name)
			case Services:
				for _, s := range t.Services {
					f.try(ctx, s.Name, ns, j.ID, tg.Name, t.Name)
				}
			case Images:
				f.configString(ctx, t, "image", ns, j.ID, tg.Name)
			case Commands:
				f.configString(ctx, t, "command", ns, j.ID, tg.Name)
			case Classes:
				f.configString(ctx, t, "class", ns, j.ID, tg.Name)
			}
		}
	}
}

// configString tries the task's config key when it is a string.
func (f *fuzzy) configString(ctx string, t *structs.Task, key, ns, jobID, group string) {
	if s, ok := t.Config[key].(string); ok && s != "" {
		f.try(ctx, s, ns, jobID, group, t.Name)
	}
}
