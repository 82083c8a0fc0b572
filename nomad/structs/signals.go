package structs

import "github.com/drover-project/drover/signals"

// checkSignal refuses a kill_signal or change_signal the drivers could
// not send (they parse it with signals.Parse too); "" is none set.
func checkSignal(name string) error {
	if name == "" {
		return nil
	}
	_, err := signals.Parse(name)
	return err
}
