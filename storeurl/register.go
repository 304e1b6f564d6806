package storeurl

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/recallkit/recall"
)

// An Opener opens the store a URL names, for Open. u is the URL as parsed
// by url.Parse, its scheme in lower case; it is the opener's own. An
// opener reads its options from u's query and fails on a parameter it does
// not know, so that a misspelt option is never silently ignored. Its
// errors should name the store by Redact(u.String()); Open scrubs the
// URL's secrets from them in any case.
type Opener func(ctx context.Context, u *url.URL) (recall.Store, error)

// registry holds the openers by scheme. Register writes it, usually from
// init functions; Open and Schemes read it, from any goroutine.
var registry struct {
	mu      sync.RWMutex
	openers map[string]Opener
}

// Register makes a store available to Open under scheme (matched without
// regard to case), like database/sql.Register: a package that provides a
// store calls it from an init function, and any program that imports the
// package can then open the store from a URL, the recall CLI's --store
// included. It is safe for concurrent use.
//
// Register panics if scheme is not a URL scheme of two characters or more
// (a one-letter one would be read as a Windows drive), if it is already
// registered, or if open is nil: these are programming errors, found the
// first time the program starts.
func Register(scheme string, open Opener) {
	if !isScheme(scheme) {
		panic("storeurl: Register of " + strconv.Quote(scheme) + ", not a URL scheme of two characters or more")
	}
	if open == nil {
		panic("storeurl: Register of scheme " + strconv.Quote(scheme) + " with a nil opener")
	}
	scheme = strings.ToLower(scheme)
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.openers[scheme]; dup {
		panic("storeurl: Register called twice for scheme " + strconv.Quote(scheme))
	}
	if registry.openers == nil {
		registry.openers = make(map[string]Opener)
	}
	registry.openers[scheme] = open
}

// Schemes returns the registered URL schemes, sorted: those of the
// built-in stores and any that other packages registered.
func Schemes() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return slices.Sorted(maps.Keys(registry.openers))
}

// lookup returns the opener of scheme (in lower case), or nil.
func lookup(scheme string) Opener {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	return registry.openers[scheme]
}
