package export

import (
	"io"

	"github.com/recallkit/recall/internal/transcript"
)

// Markdown writes the session as Markdown.
func Markdown(w io.Writer, s *Session) error {
	return transcript.Markdown(w, s.Meta.Title, nil)
}
