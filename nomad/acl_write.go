package nomad

import "github.com/drover-project/drover/nomad/structs"

// The writes check their caller themselves, so that the server is safe to
// call without the HTTP adapter in front: each write takes the caller's
// resolved ACL (nil: ACLs disabled, or an internal caller, which allows
// everything) and refuses with structs.ErrPermissionDenied what the
// caller may not do, before it reads or writes anything else.

// permit is ErrPermissionDenied unless ok.
func permit(ok bool) error {
	if !ok {
		return structs.ErrPermissionDenied
	}
	return nil
}
