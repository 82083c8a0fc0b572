package allocrunner

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/drover-project/drover/nomad/structs"
)

// TestUpdateMarkedUnknownReportsAgain: a server version marking the
// allocation unknown (its node was disconnected) makes the runner publish
// its state again, running, so that the server learns it on reconnection;
// an ordinary update publishes nothing.
func TestUpdateMarkedUnknownReportsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		alloc := newAlloc(newJob(structs.JobTypeService, mockTask("web", map[string]any{"run_for": "1h"})))
		ar := h.runner(alloc)
		go ar.Run()
		synctest.Wait()
		require.Equal(t, structs.AllocClientStatusRunning, h.lastPublished(alloc.ID).ClientStatus)

		before := len(h.published(alloc.ID))
		plain := alloc.Copy()
		plain.AllocModifyIndex = 11
		plain.ClientStatus = structs.AllocClientStatusRunning
		ar.Update(plain)
		synctest.Wait()
		require.Len(t, h.published(alloc.ID), before, "an ordinary update publishes nothing")

		marked := alloc.Copy()
		marked.AllocModifyIndex = 12
		marked.ClientStatus = structs.AllocClientStatusUnknown
		ar.Update(marked)
		synctest.Wait()
		all := h.published(alloc.ID)
		require.Len(t, all, before+1)
		require.Equal(t, structs.AllocClientStatusRunning, all[len(all)-1].ClientStatus)

		ar.StopTasks()
		select {
		case <-ar.TasksExitedCh():
		case <-time.After(time.Minute):
			t.Fatal("tasks did not stop")
		}
	})
}
