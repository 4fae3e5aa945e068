package nodeplan

import "fmt"

// FieldError reports one invalid field of one object: where it is, what it holds and what was
// expected. Validation joins several with errors.Join so every problem is reported at once.
type FieldError struct {
	// Object names the object, e.g. `NodePool "default"` or a file name; empty when unknown.
	Object string
	// Field is the path of the field, e.g. `spec.disruption.budgets[1].nodes`.
	Field string
	// Value is the offending value as written.
	Value string
	// Expected says what would have been valid.
	Expected string
}

func (e *FieldError) Error() string {
	prefix := "nodeplan: "
	if e.Object != "" {
		prefix += e.Object + ": "
	}
	if e.Value == "" {
		return fmt.Sprintf("%s%s: %s", prefix, e.Field, e.Expected)
	}
	return fmt.Sprintf("%s%s: %q is not %s", prefix, e.Field, e.Value, e.Expected)
}
