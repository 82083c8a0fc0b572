package structs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Canary targeting of system jobs: group meta keys that say how many
// canaries a rollout runs and on which nodes (scheduler/system_canary_target.go
// decides).
const (
	// MetaCanaryCount is a fixed number of canary nodes. It turns canaries
	// on by itself and wins over update { canary } (a percentage).
	MetaCanaryCount = "drover.canary_count"
	// MetaCanarySelector is a constraint expression (ParseCanarySelector):
	// canaries go only to nodes that meet it.
	MetaCanarySelector = "drover.canary_selector"
	// MetaCanarySpread is a node attribute reference (ParseCanarySpread):
	// canaries go to distinct values of it first.
	MetaCanarySpread = "drover.canary_spread"
)

func init() {
	RegisterDroverMetaKey(MetaCanaryCount, func(v string, tg *TaskGroup, jobType string) []string {
		if _, err := ParseCanaryCount(v); err != nil {
			return []string{err.Error()}
		}
		return canaryKeyNeeds(tg, jobType, false)
	})
	RegisterDroverMetaKey(MetaCanarySelector, func(v string, tg *TaskGroup, jobType string) []string {
		if _, err := ParseCanarySelector(v); err != nil {
			return []string{err.Error()}
		}
		return canaryKeyNeeds(tg, jobType, true)
	})
	RegisterDroverMetaKey(MetaCanarySpread, func(v string, tg *TaskGroup, jobType string) []string {
		if _, err := ParseCanarySpread(v); err != nil {
			return []string{err.Error()}
		}
		return canaryKeyNeeds(tg, jobType, true)
	})
}

// canaryKeyNeeds returns why a canary targeting key of group tg would
// change nothing: it is for system jobs only, needs a deployment (update
// max_parallel > 0) and, for the selector and spread, canaries.
func canaryKeyNeeds(tg *TaskGroup, jobType string, needsCanaries bool) []string {
	switch jobType {
	case JobTypeSystem:
	case JobTypeService:
		return []string{"only system jobs support canary targeting (this is a service job; its canaries are a count in update { canary })"}
	default:
		return []string{fmt.Sprintf("only system jobs support canary targeting (this is a %s job)", jobType)}
	}
	if !tg.UsesDeployment() {
		return []string{"canaries need a deployment: set update { max_parallel } above 0"}
	}
	if needsCanaries && tg.Update.Canary == 0 && tg.Meta[MetaCanaryCount] == "" {
		return []string{fmt.Sprintf("has no effect without canaries: set %s or update { canary }", MetaCanaryCount)}
	}
	return nil
}

// ParseCanaryCount parses drover.canary_count: a positive integer (decimal
// digits only).
func ParseCanaryCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || strings.TrimSpace(v) != v || strings.HasPrefix(v, "+") {
		return 0, fmt.Errorf("must be a positive integer, got %q", v)
	}
	return n, nil
}

// ParseCanarySelector parses drover.canary_selector into a constraint.
//
// Syntax: "<attribute> <operator> <value>", separated by blanks, where
// <attribute> is a node attribute reference (ParseCanarySpread), <operator>
// one of the constraint operators (=, ==, is, !=, not, <, <=, >, >=,
// regexp, version, semver, set_contains, set_contains_all,
// set_contains_any, is_set, is_not_set) and <value> the rest of the text,
// blanks inside it kept, as a constraint's value (it may itself be an
// attribute reference). is_set and is_not_set take no value. Examples:
// "${node.datacenter} = dc1", "${meta.zone} regexp ^eu-",
// "${attr.kernel.name} is_set".
func ParseCanarySelector(v string) (*Constraint, error) {
	attr, rest, _ := strings.Cut(strings.TrimSpace(v), " ")
	rest = strings.TrimSpace(rest)
	op, value, _ := strings.Cut(rest, " ")
	value = strings.TrimSpace(value)
	bad := func(why string) error {
		return fmt.Errorf("must be \"<attribute> <operator> <value>\" (e.g. \"${node.datacenter} = dc1\"): %s, got %q", why, v)
	}
	if _, err := ParseCanarySpread(attr); err != nil {
		return nil, bad("the attribute " + err.Error())
	}
	if op == "" {
		return nil, bad("the operator is missing")
	}
	if !slices.Contains(selectorOperators, op) {
		return nil, bad(fmt.Sprintf("unknown operator %q (one of %s)", op, strings.Join(selectorOperators, ", ")))
	}
	unary := op == ConstraintAttributeIsSet || op == ConstraintAttributeNotSet
	switch {
	case unary && value != "":
		return nil, bad(fmt.Sprintf("operator %q takes no value", op))
	case !unary && value == "":
		return nil, bad(fmt.Sprintf("operator %q needs a value", op))
	}
	c := &Constraint{LTarget: attr, Operand: op, RTarget: value}
	if ps := c.Validate(); len(ps) > 0 {
		return nil, bad(strings.Join(ps, "; "))
	}
	return c, nil
}

// selectorOperators are the constraint operators a canary selector may
// use: those that judge one node alone.
var selectorOperators = []string{
	"=", "==", "is", "!=", "not", "<", "<=", ">", ">=",
	ConstraintRegex, ConstraintVersion, ConstraintSemver,
	ConstraintSetContains, ConstraintSetContainsAll, ConstraintSetContainsAny,
	ConstraintAttributeIsSet, ConstraintAttributeNotSet,
}

// ParseCanarySpread checks a node attribute reference and returns it:
// ${node.datacenter}, ${node.class}, ${node.pool}, ${node.unique.name},
// ${node.unique.id}, ${attr.<name>} or ${meta.<name>}.
func ParseCanarySpread(v string) (string, error) {
	key, ok := strings.CutPrefix(v, "${")
	if ok {
		key, ok = strings.CutSuffix(key, "}")
	}
	if !ok || strings.ContainsAny(key, "${} \t") {
		return "", fmt.Errorf("must be a node attribute reference such as ${node.datacenter} or ${meta.zone}, got %q", v)
	}
	switch key {
	case "node.datacenter", "node.class", "node.pool", "node.unique.name", "node.unique.id":
		return v, nil
	}
	for _, prefix := range []string{"attr.", "meta."} {
		if name, found := strings.CutPrefix(key, prefix); found && name != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("must be a node attribute reference (${node.datacenter}, ${node.class}, ${node.pool}, ${node.unique.name}, ${node.unique.id}, ${attr.<name>} or ${meta.<name>}), got %q", v)
}
