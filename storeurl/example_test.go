package storeurl_test

import (
	"fmt"

	"github.com/recallkit/recall/storeurl"
)

func ExampleRedact() {
	fmt.Println(storeurl.Redact("postgres://app:s3cret@db.internal/recall?sslmode=require&sslpassword=s3cret"))
	fmt.Println(storeurl.Redact("redis://:s3cret@cache:6379/0?prefix=app:"))
	fmt.Println(storeurl.Redact("host=db user=app password='s3 cret' dbname=recall"))
	fmt.Println(storeurl.Redact("postgres://app:s3cret@db.internal/%zz?password=s3cret")) // does not parse
	// Output:
	// postgres://app:xxxxx@db.internal/recall?sslmode=require&sslpassword=xxxxx
	// redis://:xxxxx@cache:6379/0?prefix=app:
	// host=db user=app password=xxxxx dbname=recall
	// postgres://db.internal/[hidden]
}
