package storeurl

import (
	"context"
	"net/url"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/remotestore"
)

// openRemote opens the remote store of the recall serve at
// https://host[:port][/prefix] (http:// to a loopback host only), with
// the token of RECALL_TOKEN or the one `recall login` saved for it
// (remotestore.Token). Without one, only a loopback server may be tried
// (recall serve --auth none needs none); any other is an error that says
// to run recall login. The token is never part of the URL.
func openRemote(ctx context.Context, u *url.URL) (recall.Store, error) {
	q := newParams(u)
	if u.User != nil {
		return nil, q.errorf("a server URL holds no user or token: give the token to `recall login URL`")
	}
	if err := q.done(); err != nil {
		return nil, err
	}
	base := *u
	base.RawQuery = ""
	if _, err := remotestore.CheckURL(base.String()); err != nil {
		return nil, err
	}
	token, err := remotestore.Token(base.String())
	if err != nil && !remotestore.IsLoopback(u.Hostname()) {
		return nil, err
	}
	return remotestore.Open(ctx, base.String(), remotestore.Options{Token: token})
}
