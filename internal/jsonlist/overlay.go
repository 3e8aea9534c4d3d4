package jsonlist

import (
	"errors"
	"slices"

	"github.com/harnessd/harnessd/internal/jsonscan"
)

// errNotArray is Overlay's error for a value that is neither an array nor
// null.
var errNotArray = errors.New("not a JSON array")

// Overlay decodes the JSON array b (valid JSON) over the list cur, as
// json.Unmarshal decodes an array into a slice field that already holds
// one (a key given twice in an object): null makes it nil; element i is
// decoded by elem into cur[i] as it stands (elem must leave it as it is
// for null and merge an object into it, as json.Unmarshal does), past the
// length into the slot the capacity holds (json.Unmarshal only re-slices:
// a list shortened by an earlier key shows its old elements again), past
// the capacity into a new zero one; the list is then cut to b's length,
// and an empty array is an empty list. A list decoded over nil is the list
// a decode of b into a fresh slice gives.
func Overlay[T any](cur []T, b []byte, elem func(e []byte, v *T) error) ([]T, error) {
	if string(b) == "null" {
		return nil, nil
	}
	n := Count(b) // grown once: the slots past the capacity are zero either way
	i := 0
	var err error
	if !jsonscan.Elements(b, func(e []byte) bool {
		if i >= cap(cur) {
			cur = slices.Grow(cur, n-i)
		}
		if i >= len(cur) {
			cur = cur[:i+1]
		}
		err = elem(e, &cur[i])
		i++
		return err == nil
	}) {
		if err == nil {
			err = errNotArray
		}
		return nil, err
	}
	if i == 0 {
		return []T{}, nil
	}
	return cur[:i], nil
}
