// Package recall is the Session layer of an AI agent: it persists every
// conversation as an append-only log of entries, restores it on the next run,
// lists thousands of sessions instantly, and forks, titles, archives and
// cleans them up.
//
// The package at the module root is the application developer's API: the
// contracts every backend shares ([Key], [Item], [Entry], [Meta], the
// [Store] and [Session] interfaces and the optional abilities a store may
// have, [Guard]), the reducer that turns an entry log into the item list a
// model sees ([Replay]), the session handle whose methods work on any store
// ([StoreSession.Create], [StoreSession.Fork], [StoreSession.ChangeMeta],
// [StoreSession.SetTitle], [StoreSession.RemoveItem], ...), the functions on
// a whole store ([Cleanup], [Search], [Projects]), the limits and the sentinel errors. Backends are leaf packages
// (memstore, filestore, sqlstore, redisstore, mirror); this package
// imports none of them. What only a backend author needs lives in package
// storekit, the search engine the stores share in package search, and the
// conformance suite in storetest.
//
// An agent loop gets a session in a few lines:
//
//	store, _ := filestore.Open(filestore.Options{})
//	sess := recall.NewSession(store, recall.Key{Project: project, Session: recall.NewSessionID()})
//	history, _ := sess.GetItems(ctx, 0)
//	// ... run the model on history + input ...
//	_ = sess.AddItems(ctx, newItems...)
package recall
