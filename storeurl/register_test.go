package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// unregister removes scheme, so a test can register a scheme of its own
// and leave the registry as it found it.
func unregister(scheme string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	delete(registry.openers, scheme)
}

// testScheme returns a scheme no other test (nor another -count run)
// uses.
func testScheme(name string) string { return fmt.Sprintf("%s%d", name, time.Now().UnixNano()) }

// TestRegister plugs a third-party store (memstore behind a scheme of its
// own, which takes one option) into Open.
func TestRegister(t *testing.T) {
	scheme := testScheme("thirdparty")
	var got *url.URL
	Register(scheme, func(_ context.Context, u *url.URL) (recall.Store, error) {
		got = u
		opts := memstore.Options{}
		q := u.Query()
		if v := q.Get("max_item_size"); v != "" {
			if _, err := fmt.Sscan(v, &opts.MaxItemSize); err != nil {
				return nil, fmt.Errorf("%s: max_item_size: %w", Redact(u.String()), err)
			}
			q.Del("max_item_size")
		}
		if len(q) > 0 {
			return nil, fmt.Errorf("%s: unknown option", Redact(u.String()))
		}
		return memstore.New(opts), nil
	})
	t.Cleanup(func() { unregister(scheme) })

	st := open(t, strings.ToUpper(scheme)+"://?max_item_size=1024")
	if _, ok := st.(*memstore.Store); !ok {
		t.Fatalf("got a %T", st)
	}
	if got.Scheme != scheme || got.Query().Get("max_item_size") != "1024" {
		t.Errorf("the opener was given %v", got)
	}
	roundTrip(t, st)
	if !containsString(Schemes(), scheme) {
		t.Errorf("Schemes() = %v, without %s", Schemes(), scheme)
	}
	if err := openErr(t, scheme+"://u:s3cret@h/?nonsense=1"); !strings.Contains(err.Error(), "unknown option") {
		t.Errorf("the opener's error: %v", err)
	}

	// an opener that returns no store and no error is caught
	empty := testScheme("empty")
	Register(empty, func(context.Context, *url.URL) (recall.Store, error) { return nil, nil })
	t.Cleanup(func() { unregister(empty) })
	if err := openErr(t, empty+"://"); !strings.Contains(err.Error(), "no store") {
		t.Errorf("nil store: %v", err)
	}
}

func TestRegisterPanics(t *testing.T) {
	opener := func(context.Context, *url.URL) (recall.Store, error) { return memstore.New(memstore.Options{}), nil }
	scheme := testScheme("dup")
	Register(scheme, opener)
	t.Cleanup(func() { unregister(scheme) })
	for name, call := range map[string]func(){
		"empty":               func() { Register("", opener) },
		"one letter":          func() { Register("c", opener) },
		"not a scheme":        func() { Register("my store", opener) },
		"nil opener":          func() { Register(testScheme("nil"), nil) },
		"duplicate":           func() { Register(scheme, opener) },
		"duplicate, any case": func() { Register(strings.ToUpper(scheme), opener) },
		"a built-in":          func() { Register("postgres", opener) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Register did not panic")
				}
			}()
			call()
		})
	}
}

// TestRegisterConcurrent registers schemes while others open stores and
// list the schemes (run with -race).
func TestRegisterConcurrent(t *testing.T) {
	base := testScheme("conc")
	opener := func(context.Context, *url.URL) (recall.Store, error) { return memstore.New(memstore.Options{}), nil }
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		scheme := fmt.Sprintf("%sx%d", base, i)
		t.Cleanup(func() { unregister(scheme) })
		wg.Go(func() { Register(scheme, opener) })
		wg.Go(func() {
			st, err := Open(context.Background(), "mem://")
			if err != nil {
				errs <- err
				return
			}
			_ = st.Close()
			_ = Schemes()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range 16 {
		st, err := Open(context.Background(), fmt.Sprintf("%sx%d://", base, i))
		if err != nil {
			t.Fatal(err)
		}
		_ = st.Close()
	}
}

func TestUnknownSchemeListsRegistered(t *testing.T) {
	scheme := testScheme("listed")
	Register(scheme, func(context.Context, *url.URL) (recall.Store, error) { return nil, errors.New("unused") })
	t.Cleanup(func() { unregister(scheme) })
	err := openErr(t, "nosuch://u:s3cret@h/db?password=s3cret")
	if !errors.Is(err, ErrUnknownScheme) || !strings.Contains(err.Error(), scheme) || !strings.Contains(err.Error(), "nosuch://u:xxxxx@h/db?password=xxxxx") {
		t.Errorf("unknown scheme: %v", err)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
