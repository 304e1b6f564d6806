package recall

import (
	"errors"
	"testing"
)

func TestItemRefString(t *testing.T) {
	for _, tc := range []struct {
		s   string
		ref ItemRef
	}{{"1", ItemRef{Seq: 1}}, {"42", ItemRef{Seq: 42}}, {"7.3", ItemRef{Seq: 7, Index: 3}}} {
		if got := tc.ref.String(); got != tc.s {
			t.Errorf("%+v.String() = %q, want %q", tc.ref, got, tc.s)
		}
		if got, err := ParseItemRef(tc.s); got != tc.ref || err != nil {
			t.Errorf("ParseItemRef(%q) = %+v, %v; want %+v", tc.s, got, err, tc.ref)
		}
	}
	// "7.0" names the same item as "7".
	if got, err := ParseItemRef("7.0"); got != (ItemRef{Seq: 7}) || err != nil {
		t.Errorf("ParseItemRef(7.0) = %+v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "x", "1.", ".1", "1.-1", "1.x", "1.2.3", "99999999999999999999"} {
		if _, err := ParseItemRef(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ParseItemRef(%q): %v, want ErrInvalidKey", bad, err)
		}
	}
}
