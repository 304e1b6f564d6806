package server

import (
	"regexp"
	"strings"
	"testing"

	"github.com/recallkit/recall/memstore"
)

// TestWebMarkdownImages: a session page shows a Markdown image of a data:
// URI of a raster type as an image, and any other (remote, SVG, script)
// as no image: a remote one as a link to it, so opening the page fetches
// nothing from another server.
func TestWebMarkdownImages(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	e := newEnv(t, st, Options{}, nil)
	const png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	text := strings.Join([]string{
		"![a pixel](" + png + ")",
		"![tracker](https://evil.example/track.png)",
		"![](https://evil.example/bare.png)",
		"![ref][r]",
		"[![linked](https://evil.example/in-link.png)](https://example.com/page)",
		"![svg](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)",
		"![js](javascript:alert(1))",
		"",
		"[r]: https://evil.example/ref.png",
	}, "\n\n")
	id := e.newConv("alice", msg("assistant", text))
	page := string(e.do("GET", "/s/"+id, "", nil, "Cookie", sessionCookie+"="+e.tokens["alice"]).want(t, 200).body)
	_, page, ok := strings.Cut(page, `<ol id="items"`) // the items, not the page's own icon
	if !ok {
		t.Fatalf("no items on the page")
	}

	imgs := regexp.MustCompile(`<img [^>]*src="([^"]*)"`).FindAllStringSubmatch(page, -1)
	var srcs []string
	for _, m := range imgs {
		srcs = append(srcs, m[1])
	}
	if len(srcs) != 1 || srcs[0] != png {
		t.Errorf("images %q, want only the PNG data: URI", srcs)
	}
	for _, link := range []string{
		`<a href="https://evil.example/track.png" rel="nofollow noreferrer noopener" target="_blank">tracker</a>`,
		`<a href="https://evil.example/bare.png" rel="nofollow noreferrer noopener" target="_blank">https://evil.example/bare.png</a>`,
		`<a href="https://evil.example/ref.png" rel="nofollow noreferrer noopener" target="_blank">ref</a>`,
		`<a href="https://example.com/page" rel="nofollow noreferrer noopener" target="_blank">linked</a>`,
	} {
		if !strings.Contains(page, link) {
			t.Errorf("the page lacks %s", link)
		}
	}
	for _, bad := range []string{"in-link.png", "svg+xml", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
}
