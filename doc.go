// Package recall is the Session layer of an AI agent: it persists every
// conversation as an append-only log of entries, restores it on the next run,
// lists thousands of sessions instantly, and forks, titles, archives and
// cleans them up.
//
// The package at the module root holds the contracts every backend shares:
// [Key], [Item], [Entry], [Meta], the [Store] and [Session] interfaces, the
// reducer that turns an entry log into the item list a model sees, and the
// sentinel errors. Backends are leaf packages (memstore, filestore, sqlstore,
// redisstore, mirror); this package imports none of them.
//
// An agent loop gets a session in a few lines:
//
//	store, _ := filestore.Open(filestore.Options{})
//	sess := recall.NewSession(store, recall.Key{Project: project, Session: recall.NewSessionID()})
//	history, _ := sess.GetItems(ctx, 0)
//	// ... run the model on history + input ...
//	_ = sess.AddItems(ctx, newItems...)
package recall
