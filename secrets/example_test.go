package secrets_test

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/secrets"
)

// A store wrapped by NewStore never receives a secret: the item is
// redacted on its way in, and Redacted says what was taken out.
func ExampleNewStore() {
	ctx := context.Background()
	r, err := secrets.New(secrets.Options{
		Patterns: []secrets.Pattern{{Name: "employee-id", Regexp: `EMP-\d{6}`}},
	})
	if err != nil {
		panic(err)
	}
	st := secrets.NewStore(memstore.New(memstore.Options{}), r)
	defer st.Close()

	sess := recall.NewSession(st, recall.Key{Project: "demo", Session: "s1"})
	err = sess.AddItems(ctx,
		recall.Item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"deploy as EMP-004211 with AKIAZ4XNBV7QK2MDPL3F"}]}`),
		recall.Item(`{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"psql postgres://app:Hq8vN2mx7Lp@db/app\"}"}`),
	)
	if err != nil {
		panic(err)
	}
	items, _ := sess.GetItems(ctx, 0)
	for _, it := range items {
		fmt.Println(string(it))
	}
	fmt.Println("redacted", st.Redacted())
	// Output:
	// {"type":"message","role":"user","content":[{"type":"input_text","text":"deploy as [REDACTED:employee-id] with [REDACTED:aws-access-token]"}]}
	// {"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"psql postgres://app:[REDACTED:url-password]@db/app\"}"}
	// redacted 3 secrets: 1 aws-access-token, 1 employee-id, 1 url-password
}

func ExampleRedactor_String() {
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		panic(err)
	}
	text, rep := r.String("export GITHUB_TOKEN=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")
	fmt.Println(text)
	fmt.Println(rep)
	// Output:
	// export GITHUB_TOKEN=[REDACTED:github-pat]
	// 1 secret: 1 github-pat
}
