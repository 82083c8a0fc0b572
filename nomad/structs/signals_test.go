package structs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A signal the drivers cannot send is refused at registration: kill_signal
// would skip the graceful stop (the task is killed at once), a template's
// or an identity's change_signal would never reach the task.
func TestValidate_SignalNames(t *testing.T) {
	cases := []struct {
		name string
		set  func(*Task, string)
		what string
	}{
		{"kill_signal", func(t *Task, s string) { t.KillSignal = s }, "kill_signal"},
		{"template change_signal", func(t *Task, s string) {
			tm := okTemplate()
			tm.ChangeMode, tm.ChangeSignal = TemplateChangeModeSignal, s
			t.Templates = []*Template{tm}
		}, "change_signal"},
		{"identity change_signal", func(t *Task, s string) {
			t.Identities = []*WorkloadIdentity{{Name: "x", File: true, ChangeMode: IdentityChangeModeSignal, ChangeSignal: s}}
		}, "change_signal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, ok := range []string{"SIGHUP", "hup", "USR1", "10"} {
				j := testJob()
				tc.set(j.TaskGroups[0].Tasks[0], ok)
				require.NoError(t, j.Validate(), ok)
			}
			for _, bad := range []string{"SIGBOGUS", "0", "SIGRTMIN+3"} {
				j := testJob()
				tc.set(j.TaskGroups[0].Tasks[0], bad)
				err := j.Validate()
				var verr *ValidationError
				require.ErrorAs(t, err, &verr, bad)
				want := tc.what + ": "
				found := false
				for _, p := range verr.Problems {
					found = found || (containsProblem([]string{p}, want) && containsProblem([]string{p}, `"`+bad+`"`))
				}
				assert.True(t, found, "want a problem naming %s and %q, got:\n%s", tc.what, bad, err)
			}
		})
	}
}
