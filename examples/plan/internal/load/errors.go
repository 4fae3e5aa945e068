package load

import (
	"errors"
	"strings"
)

// Error is input that cannot be used: the file, where in it, and what is wrong with it.
type Error struct {
	// File is the path as given.
	File string
	// Object says where in the file, e.g. "document 2 (line 14): Pod default/web"; empty when
	// the problem is with the file as a whole.
	Object string
	// Err is the problem.
	Err error
}

func (e *Error) Error() string {
	s := "file " + e.File
	if e.Object != "" {
		s += ": " + e.Object
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// fieldError is one invalid field of an object, by its JSON path.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

// trimPrefix drops the package prefix ("nodeplan: ") of errors from the root package: the file
// and object already say where the message comes from.
func trimPrefix(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.ReplaceAll(strings.TrimPrefix(err.Error(), "nodeplan: "), "\nnodeplan: ", "\n"))
}
