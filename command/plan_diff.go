package command

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// Diff types sent by the server.
const (
	diffAdded   = "Added"
	diffDeleted = "Deleted"
	diffEdited  = "Edited"
	diffNone    = "None"
)

// diffMarker returns the marker printed before a changed line.
func diffMarker(t string) string {
	switch t {
	case diffAdded:
		return "+"
	case diffDeleted:
		return "-"
	case diffEdited:
		return "+/-"
	}
	return ""
}

// diffItem is one line of a rendered diff with its nested lines.
type diffItem struct {
	marker   string
	text     string
	children []diffItem
	closer   bool // print a closing brace after the children
}

// writeDiffItems writes sibling items at the given indentation, padding the
// markers so the texts line up.
func writeDiffItems(b *strings.Builder, items []diffItem, indentN int) {
	width := 0
	for _, it := range items {
		width = max(width, len(it.marker))
	}
	pad := strings.Repeat(" ", indentN)
	for _, it := range items {
		textCol := indentN
		if width > 0 {
			fmt.Fprintf(b, "%s%-*s %s\n", pad, width, it.marker, it.text)
			textCol += width + 1
		} else {
			fmt.Fprintf(b, "%s%s\n", pad, it.text)
		}
		writeDiffItems(b, it.children, indentN+2)
		if it.closer {
			fmt.Fprintf(b, "%s}\n", strings.Repeat(" ", textCol))
		}
	}
}

// formatJobDiff renders a job diff with +/-/~ markers. Unchanged fields,
// objects and tasks are shown only when verbose. Task group update counts
// come from the diff, or from the plan annotations when the diff has none.
func formatJobDiff(d *api.JobDiff, ann *api.PlanAnnotations, verbose bool) string {
	if d == nil {
		return ""
	}
	var b strings.Builder
	writeDiffItems(&b, []diffItem{{marker: diffMarker(d.Type), text: fmt.Sprintf("Job: %q", d.ID)}}, 0)
	items := append(fieldItems(d.Fields, verbose), objectItems(d.Objects, verbose)...)
	for _, tg := range d.TaskGroups {
		items = append(items, taskGroupItem(tg, ann, verbose))
	}
	writeDiffItems(&b, items, 0)
	return strings.TrimRight(b.String(), "\n")
}

func taskGroupItem(tg *api.TaskGroupDiff, ann *api.PlanAnnotations, verbose bool) diffItem {
	text := fmt.Sprintf("Task Group: %q", tg.Name)
	updates := tg.Updates
	if len(updates) == 0 && ann != nil {
		updates = updatesFromAnnotations(ann.DesiredTGUpdates[tg.Name])
	}
	if counts := formatUpdateCounts(updates); counts != "" {
		text += " (" + counts + ")"
	}
	children := append(fieldItems(tg.Fields, verbose), objectItems(tg.Objects, verbose)...)
	for _, t := range tg.Tasks {
		if t.Type == diffNone && !verbose {
			continue
		}
		children = append(children, taskItem(t, verbose))
	}
	return diffItem{marker: diffMarker(tg.Type), text: text, children: children}
}

func taskItem(t *api.TaskDiff, verbose bool) diffItem {
	text := fmt.Sprintf("Task: %q", t.Name)
	if len(t.Annotations) > 0 {
		text += " (" + strings.Join(t.Annotations, ", ") + ")"
	}
	children := append(fieldItems(t.Fields, verbose), objectItems(t.Objects, verbose)...)
	return diffItem{marker: diffMarker(t.Type), text: text, children: children}
}

func fieldItems(fields []*api.FieldDiff, verbose bool) []diffItem {
	var items []diffItem
	for _, f := range fields {
		if f.Type == diffNone && !verbose {
			continue
		}
		var text string
		switch f.Type {
		case diffAdded:
			text = fmt.Sprintf("%s: %q", f.Name, f.New)
		case diffDeleted:
			text = fmt.Sprintf("%s: %q", f.Name, f.Old)
		case diffEdited:
			text = fmt.Sprintf("%s: %q => %q", f.Name, f.Old, f.New)
		default:
			text = fmt.Sprintf("%s: %q", f.Name, f.New)
		}
		if len(f.Annotations) > 0 {
			text += " (" + strings.Join(f.Annotations, ", ") + ")"
		}
		items = append(items, diffItem{marker: diffMarker(f.Type), text: text})
	}
	return items
}

func objectItems(objects []*api.ObjectDiff, verbose bool) []diffItem {
	var items []diffItem
	for _, o := range objects {
		if o.Type == diffNone && !verbose {
			continue
		}
		children := append(fieldItems(o.Fields, verbose), objectItems(o.Objects, verbose)...)
		items = append(items, diffItem{
			marker: diffMarker(o.Type), text: o.Name + " {", children: children, closer: true,
		})
	}
	return items
}

// updateOrder is the order in which update counts are listed.
var updateOrder = []string{
	"create", "destroy", "migrate", "canary", "in-place update", "create/destroy update", "ignore",
}

// formatUpdateCounts renders {"create": 1, "ignore": 2} as
// "1 create, 2 ignore".
func formatUpdateCounts(updates map[string]uint64) string {
	rank := func(k string) int {
		for i, o := range updateOrder {
			if o == k {
				return i
			}
		}
		return len(updateOrder)
	}
	keys := sortedKeys(updates)
	sort.SliceStable(keys, func(i, j int) bool { return rank(keys[i]) < rank(keys[j]) })
	var parts []string
	for _, k := range keys {
		if updates[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", updates[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

// updatesFromAnnotations maps the scheduler's desired updates to the
// update-count keys of a task group diff.
func updatesFromAnnotations(u *api.DesiredUpdates) map[string]uint64 {
	if u == nil {
		return nil
	}
	return map[string]uint64{
		"create":                u.Place,
		"destroy":               u.Stop,
		"migrate":               u.Migrate,
		"canary":                u.Canary,
		"in-place update":       u.InPlaceUpdate,
		"create/destroy update": u.DestructiveUpdate,
		"ignore":                u.Ignore,
	}
}
