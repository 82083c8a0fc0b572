//go:build !linux

package network

import "errors"

var errNoNetns = errors.New("network: network namespaces need Linux")

func createNetns(string) error        { return errNoNetns }
func adoptNetns(string, string) error { return errNoNetns }
func deleteNetns(string) error        { return nil }
func isNetns(string) bool             { return false }
