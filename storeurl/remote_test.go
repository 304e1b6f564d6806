package storeurl

import (
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall/remotestore"
)

// TestRemote checks the refusals of https:// and http:// store URLs: a
// clear text URL to another machine, a token in the URL (never repeated
// in the error), and a server with no token kept, whose error names
// recall login.
func TestRemote(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(remotestore.TokenEnv, "")
	if err := openErr(t, "http://recall.example.com"); !errors.Is(err, remotestore.ErrInsecure) {
		t.Errorf("http:// to a remote host: %v, want ErrInsecure", err)
	}
	if err := openErr(t, "https://u:s3cret@recall.example.com"); strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "recall login") {
		t.Errorf("a token in the URL: %v", err)
	}
	err := openErr(t, "https://recall.example.com:8443/team")
	if !errors.Is(err, remotestore.ErrNoToken) || !strings.Contains(err.Error(), "recall login https://recall.example.com:8443/team") {
		t.Errorf("no token kept: %v, want ErrNoToken naming recall login URL", err)
	}
	if err := remotestore.SaveToken("https://recall.example.com:8443/team/", "rk_kept"); err != nil {
		t.Fatal(err)
	}
	st := open(t, "https://recall.example.com:8443/team")
	if u := st.(*remotestore.Store).URL(); u != "https://recall.example.com:8443/team" {
		t.Errorf("URL() = %q", u)
	}
	open(t, "http://127.0.0.1:1") // loopback: tried without a token (recall serve --auth none)
}
