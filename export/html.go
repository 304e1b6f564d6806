package export

import (
	"io"
)

// HTML writes the session as one self-contained HTML page.
func HTML(w io.Writer, s *Session) error {
	_, err := io.WriteString(w, "<!DOCTYPE html>\n")
	return err
}
