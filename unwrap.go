package recall

// As finds the optional ability T (Searcher, Forker, Cleaner,
// ProjectLister, Purger, ...) on s or on the store s wraps.
//
// A Store that wraps another one to observe its calls (to time, log or
// count them) has a method Unwrap() Store returning the store it wraps,
// the way wrapped errors and http.ResponseWriters do. As, and through it
// every helper of this package that uses a store's own method when it has
// one (Search, Fork, Cleanup, Projects), follows Unwrap until a store
// implements T, so a wrapper cannot hide an ability by forgetting to
// forward it. A wrapper may still implement an ability itself (to time
// it, say); As then finds the wrapper's first.
//
// Only a wrapper that leaves every call's effect unchanged has Unwrap: one
// that changes what a call does, as the mirror replicates every write,
// implements the abilities it keeps, since a caller that found the inner
// store's would bypass it.
func As[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		w, ok := s.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		s = w.Unwrap()
	}
	var zero T
	return zero, false
}
