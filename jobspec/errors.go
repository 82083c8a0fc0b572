package jobspec

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// diagError adapts error diagnostics to the error interface. Each diagnostic is
// rendered on its own line as "file:line,col-col: Summary; Detail".
type diagError struct {
	diags hcl.Diagnostics
}

func (e *diagError) Error() string {
	lines := make([]string, 0, len(e.diags))
	for _, d := range e.diags {
		lines = append(lines, formatDiag(d))
	}
	return strings.Join(lines, "\n")
}

// formatDiag renders one diagnostic; diagnostics without a subject omit the position.
func formatDiag(d *hcl.Diagnostic) string {
	msg := d.Summary
	if d.Detail != "" {
		msg += "; " + d.Detail
	}
	if d.Subject == nil {
		return msg
	}
	return fmt.Sprintf("%s: %s", d.Subject, msg)
}

// diagsToError returns nil when diags holds no errors, otherwise an error
// listing only the error-severity diagnostics.
func diagsToError(diags hcl.Diagnostics) error {
	if !diags.HasErrors() {
		return nil
	}
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	return &diagError{diags: errs}
}

// errDiag builds a single error diagnostic; rng may be nil.
func errDiag(rng *hcl.Range, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng}
}
