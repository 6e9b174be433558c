// Package opt holds the one rule the runtime's option structs share for
// their limits: a zero or negative value means the default.
package opt

// Positive sets *v to def unless *v is positive.
func Positive[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
