package storeurl_test

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storeurl"
)

// A package that provides a store registers its scheme from an init
// function, the way a database/sql driver does; importing the package is
// then enough for storeurl.Open, and the recall CLI's --store, to open it.
// Here the store is a memstore under the scheme "scratch", with one option.
func init() {
	storeurl.Register("scratch", func(_ context.Context, u *url.URL) (recall.Store, error) {
		var opts memstore.Options
		q := u.Query()
		if v := q.Get("max_item_size"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("scratch: %s: max_item_size: %w", storeurl.Redact(u.String()), err)
			}
			opts.MaxItemSize = n
			q.Del("max_item_size")
		}
		if len(q) > 0 {
			// never ignore an option silently
			return nil, fmt.Errorf("scratch: unknown option %s", strings.Join(slices.Sorted(maps.Keys(q)), ", "))
		}
		return memstore.New(opts), nil
	})
}

func ExampleRegister() {
	ctx := context.Background()
	st, err := storeurl.Open(ctx, "scratch://?max_item_size=1024")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	key := recall.Key{Project: "demo", Session: "s1"}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.Message("user", "hello").Entry()); err != nil {
		fmt.Println(err)
		return
	}
	m, err := st.Stat(ctx, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("items:", m.ItemCount)
	fmt.Println("registered:", slices.Contains(storeurl.Schemes(), "scratch"))

	_, err = storeurl.Open(ctx, "scratch://?sync=never")
	fmt.Println(err)
	// Output:
	// items: 1
	// registered: true
	// scratch: unknown option sync
}
