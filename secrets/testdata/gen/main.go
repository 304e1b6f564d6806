// Command gen writes ../corpus.json: fake secrets in the formats of real
// ones (with the checksums their formats carry) and look-alikes that are
// not secrets, each in a line of text an agent session could hold. None
// of the secrets was ever issued; they are random. Run it from the secrets
// directory: go run ./testdata/gen
package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	mrand "math/rand/v2"
	"os"
	"strings"
)

// Case is one line of the corpus.
type Case struct {
	Kind string `json:"kind"` // "secret" or "lookalike"
	Name string `json:"name"`
	// Value is the secret, which must not survive redaction, or the
	// look-alike, which must.
	Value string `json:"value"`
	// Text is Value in context, as a session would hold it.
	Text string `json:"text"`
}

var rng = mrand.New(mrand.NewPCG(2026, 12))

const (
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	lower  = "abcdefghijklmnopqrstuvwxyz"
	digits = "0123456789"
	alnum  = digits + upper + lower
	hexd   = "0123456789abcdef"
	b32    = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	word   = alnum + "_"
	urlb64 = alnum + "-_"
)

func randFrom(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// base62 encodes n in 6 digits of 0-9A-Za-z, as GitHub's and npm's token
// checksums are written.
func base62(n uint32) string {
	b := make([]byte, 6)
	for i := 5; i >= 0; i-- {
		b[i] = alnum[n%62]
		n /= 62
	}
	return string(b)
}

// checksummed returns prefix + 30 random characters + the base62 CRC32 of
// them, the format of GitHub's and npm's tokens.
func checksummed(prefix string) string {
	body := randFrom(alnum, 30)
	return prefix + body + base62(crc32.ChecksumIEEE([]byte(body)))
}

func jwt() string {
	enc := base64.RawURLEncoding
	header := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	payload := enc.EncodeToString(fmt.Appendf(nil, `{"sub":"user-%d","name":"Dana Scully","iat":%d,"exp":%d}`,
		rng.IntN(1e6), 1760000000+rng.IntN(1e6), 1770000000+rng.IntN(1e6)))
	mac := hmac.New(sha256.New, randBytes(32))
	mac.Write([]byte(header + "." + payload))
	return header + "." + payload + "." + enc.EncodeToString(mac.Sum(nil))
}

func pemKey(kind string) string {
	var der []byte
	var typ string
	switch kind {
	case "rsa":
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		der, typ = x509.MarshalPKCS1PrivateKey(k), "RSA PRIVATE KEY"
	case "ec":
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, _ = x509.MarshalECPrivateKey(k)
		typ = "EC PRIVATE KEY"
	case "pkcs8":
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		der, _ = x509.MarshalPKCS8PrivateKey(k)
		typ = "PRIVATE KEY"
	case "openssh":
		der = append([]byte("openssh-key-v1\x00"), randBytes(380)...)
		typ = "OPENSSH PRIVATE KEY"
	}
	return strings.TrimSpace(string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
}

func uuid4() string {
	b := randBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func password() string {
	return randFrom(alnum, 6) + "-" + randFrom(alnum, 6) + "-" + randFrom(alnum, 4)
}

func secrets() []Case {
	var cs []Case
	add := func(name, value, format string) {
		cs = append(cs, Case{Kind: "secret", Name: name, Value: value, Text: fmt.Sprintf(format, value)})
	}
	awsSecret := randFrom(alnum+"+/", 40)
	add("aws-access-key-id", "AKIA"+randFrom(b32, 16), "export AWS_ACCESS_KEY_ID=%s\nexport AWS_DEFAULT_REGION=eu-west-1")
	add("aws-secret-access-key", awsSecret, "[default]\naws_access_key_id = AKIA"+randFrom(b32, 16)+"\naws_secret_access_key = %s\n")
	add("aws-session-key-id", "ASIA"+randFrom(b32, 16), `{"Credentials": {"AccessKeyId": "%s", "Expiration": "2026-12-06T18:00:00Z"}}`)
	add("gcp-api-key", "AIza"+randFrom(urlb64, 35), "curl 'https://maps.googleapis.com/maps/api/geocode/json?address=Paris' -G --data-urlencode key=%s")
	gcpSA := pemKey("pkcs8")
	saJSON, _ := json.MarshalIndent(map[string]string{
		"type": "service_account", "project_id": "acme-prod-4412", "private_key_id": hex.EncodeToString(randBytes(20)),
		"private_key": gcpSA + "\n", "client_email": "deployer@acme-prod-4412.iam.gserviceaccount.com",
	}, "", "  ")
	cs = append(cs, Case{Kind: "secret", Name: "gcp-service-account-key", Value: strings.Split(gcpSA, "\n")[1], Text: "$ cat key.json\n" + string(saJSON)})
	add("azure-ad-client-secret", randFrom(alnum, 3)+"8Q~"+randFrom(alnum+"_~.-", 34), "az login --service-principal -u 2f6e1c1a-6d3b-4b0e-9d7a-1f2e3d4c5b6a -p %s --tenant acme.onmicrosoft.com")
	add("azure-storage-account-key", base64.StdEncoding.EncodeToString(randBytes(64)),
		"AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey=%s;EndpointSuffix=core.windows.net\"")
	add("github-pat", checksummed("ghp_"), "git clone https://x-access-token:%s@github.com/acme/infra.git")
	add("github-fine-grained-pat", "github_pat_"+randFrom(alnum, 22)+"_"+randFrom(alnum, 59), "GH_TOKEN=%s gh pr list --repo acme/api")
	add("github-oauth", checksummed("gho_"), `{"oauth_token": "%s", "user": "dana"}`)
	add("github-app-token", checksummed("ghs_"), "Authorization: token %s")
	add("github-user-to-server", checksummed("ghu_"), "the app's user token is %s, it expires in 8 hours")
	add("gitlab-pat", "glpat-"+randFrom(urlb64, 20), "curl --header \"PRIVATE-TOKEN: %s\" https://gitlab.example.org/api/v4/projects")
	add("gitlab-pat-2", "glpat-"+randFrom(alnum, 20), "git remote set-url origin https://oauth2:%s@gitlab.com/acme/web.git")
	add("slack-bot-token", "xoxb-"+randFrom(digits, 12)+"-"+randFrom(digits, 13)+"-"+randFrom(alnum, 24), "SLACK_BOT_TOKEN=%s")
	add("slack-user-token", "xoxp-"+randFrom(digits, 12)+"-"+randFrom(digits, 12)+"-"+randFrom(digits, 13)+"-"+randFrom(hexd, 32), "slack token: %s")
	add("slack-webhook", "https://hooks.slack.com/services/T"+randFrom(upper+digits, 8)+"/B"+randFrom(upper+digits, 10)+"/"+randFrom(alnum, 24),
		`curl -X POST -H 'Content-type: application/json' --data '{"text":"deploy done"}' %s`)
	add("stripe-live-secret", "sk_live_"+randFrom(alnum, 99), "STRIPE_SECRET_KEY=%s")
	add("stripe-restricted", "rk_live_"+randFrom(alnum, 99), "stripe.api_key = \"%s\"")
	add("stripe-test-secret", "sk_test_"+randFrom(alnum, 99), "use %s for the sandbox")
	add("openai-project-key", "sk-proj-"+randFrom(urlb64, 74)+"T3BlbkFJ"+randFrom(urlb64, 74), "export OPENAI_API_KEY=%s")
	add("openai-legacy-key", "sk-"+randFrom(alnum, 20)+"T3BlbkFJ"+randFrom(alnum, 20), "openai.api_key = '%s'")
	add("anthropic-api-key", "sk-ant-api03-"+randFrom(urlb64, 93)+"AA", "ANTHROPIC_API_KEY=%s claude -p 'hi'")
	add("anthropic-admin-key", "sk-ant-admin01-"+randFrom(urlb64, 93)+"AA", `{"x-api-key": "%s"}`)
	for _, k := range []string{"rsa", "ec", "pkcs8", "openssh"} {
		key := pemKey(k)
		lines := strings.Split(key, "\n")
		cs = append(cs, Case{Kind: "secret", Name: "private-key-" + k, Value: lines[len(lines)/2], Text: "$ cat ~/.ssh/id_deploy\n" + key + "\n"})
	}
	add("jwt", jwt(), "Authorization: Bearer %s")
	add("jwt-cookie", jwt(), "Set-Cookie: session=%s; Path=/; HttpOnly")
	add("postgres-url", password(), "DATABASE_URL=postgres://app:%s@db.internal:5432/app?sslmode=require")
	add("postgresql-url", password(), "psql postgresql://admin:%s@10.0.4.12/analytics")
	add("mysql-url", password(), "mysql://root:%s@localhost:3306/shop")
	add("mongodb-url", password(), "MONGO_URI=mongodb+srv://svc-reader:%s@cluster0.ab1cd.mongodb.net/prod?retryWrites=true")
	add("redis-url", password(), "redis-cli -u redis://default:%s@cache.internal:6379/0 ping")
	add("amqp-url", password(), "amqps://orders:%s@rabbit.acme.io/vhost")
	add("db-password-env", randFrom(alnum, 18), "DB_PASSWORD=%s\nDB_USER=app")
	add("yaml-secret", randFrom(alnum, 32), "jwt:\n  secret: %s\n  ttl: 3600")
	add("npm-token", checksummed("npm_"), "//registry.npmjs.org/:_authToken=%s")
	add("pypi-token", "pypi-AgEIcHlwaS5vcmc"+randFrom(urlb64, 70), "twine upload -u __token__ -p %s dist/*")
	add("huggingface-token", "hf_"+randFrom(upper+lower, 34), "huggingface-cli login --token %s")
	add("sendgrid-key", "SG."+randFrom(urlb64, 22)+"."+randFrom(urlb64, 43), "SENDGRID_API_KEY='%s'")
	add("twilio-api-key", "SK"+randFrom(hexd, 32), "twilio api key sid %s")
	add("digitalocean-pat", "dop_v1_"+randFrom(hexd, 64), "doctl auth init -t %s")
	add("heroku-key", "HRKU-AA"+randFrom(urlb64, 58), "HEROKU_API_KEY=%s")
	add("shopify-token", "shpat_"+randFrom(hexd, 32), `X-Shopify-Access-Token: %s`)
	add("linear-key", "lin_api_"+randFrom(alnum, 40), "LINEAR_API_KEY=%s")
	add("postman-key", "PMAK-"+randFrom(hexd, 24)+"-"+randFrom(hexd, 34), "postman login --with-api-key %s")
	add("doppler-token", "dp.pt."+randFrom(alnum, 43), "doppler configure set token %s")
	add("age-secret-key", "AGE-SECRET-KEY-1"+randFrom("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58), "# created: 2026-12-01\n%s")
	add("databricks-token", "dapi"+randFrom(hexd, 32), "databricks configure --token <<< %s")
	add("terraform-token", randFrom(lower+digits, 14)+".atlasv1."+randFrom(lower+digits, 67), "credentials \"app.terraform.io\" { token = \"%s\" }")
	add("vault-token", "hvs."+randFrom(word, 95), "VAULT_TOKEN=%s vault kv get secret/app")
	add("telegram-bot", randFrom(digits, 10)+":A"+randFrom(lower+digits, 34), "TELEGRAM_BOT_TOKEN=%s")
	add("grafana-sa-token", "glsa_"+randFrom(alnum, 32)+"_"+randFrom(hexd, 8), "grafana token: %s")
	add("sentry-user-token", "sntryu_"+randFrom(hexd, 64), "SENTRY_AUTH_TOKEN=%s")
	add("pulumi-token", "pul-"+randFrom(hexd, 40), "PULUMI_ACCESS_TOKEN=%s pulumi up")
	add("perplexity-key", "pplx-"+randFrom(alnum, 48), "PPLX_API_KEY=%s")
	add("alibaba-key-id", "LTAI"+randFrom(alnum, 20), "aliyun configure set --access-key-id %s")
	add("planetscale-password", "pscale_pw_"+randFrom(alnum, 43), "PLANETSCALE_PASSWORD=%s")
	add("curl-bearer", randFrom(alnum, 40), `curl -H "Authorization: Bearer %s" https://api.acme.dev/v2/users`)
	add("basic-auth-header", base64.StdEncoding.EncodeToString([]byte("deploy:"+password())), `curl -H "Authorization: Basic %s" https://ci.acme.dev/job/build`)
	return cs
}

func lookalikes() []Case {
	var cs []Case
	add := func(name, value, format string) {
		cs = append(cs, Case{Kind: "lookalike", Name: name, Value: value, Text: fmt.Sprintf(format, value)})
	}
	sha := func(n int) string { return randFrom(hexd, n) }
	add("uuid-v4", uuid4(), "created session %s")
	add("uuid-request-id", uuid4(), `{"request_id": "%s", "status": 200}`)
	add("uuid-in-path", uuid4(), "GET /api/v1/orders/%s HTTP/1.1")
	add("uuid-trace", uuid4(), "trace_id=%s span=7")
	add("uuid-upper", strings.ToUpper(uuid4()), "ProjectGuid = \"{%s}\"")
	add("git-sha", sha(40), "commit %s\nAuthor: Dana <dana@example.org>")
	add("git-short-sha", sha(7), "HEAD is now at %s fix the flaky test")
	add("git-sha-merge", sha(40), "Merge: %s")
	add("git-rev-parse", sha(40), "$ git rev-parse HEAD\n%s")
	add("git-log-oneline", sha(12), "%s (origin/main) bump deps")
	add("sha256-digest", sha(64), "%s  release.tar.gz")
	add("docker-digest", "sha256:"+sha(64), "image: ghcr.io/acme/api@%s")
	add("md5sum", hex.EncodeToString(md5.New().Sum(randBytes(4))[:16]), "%s  backup.sql")
	add("sha1-hash", fmt.Sprintf("%x", sha1.Sum(randBytes(8))), "etag: \"%s\"")
	add("npm-integrity", "sha512-"+base64.StdEncoding.EncodeToString(randBytes(64)), `"integrity": "%s"`)
	add("go-sum", "h1:"+base64.StdEncoding.EncodeToString(randBytes(32)), "github.com/google/uuid v1.6.0 %s")
	add("base64-text", base64.StdEncoding.EncodeToString([]byte("The quick brown fox jumps over the lazy dog, twice.")), "echo %s | base64 -d")
	add("base64-json", base64.StdEncoding.EncodeToString([]byte(`{"theme":"dark","lang":"en","sidebar":true}`)), "localStorage prefs: %s")
	add("base64-yaml", base64.StdEncoding.EncodeToString([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n")), "data: %s")
	add("aws-example-key-id", "AKIAIOSFODNN7EXAMPLE", "aws configure set aws_access_key_id %s # from the AWS docs")
	add("aws-example-secret", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "the docs use %s as the sample secret")
	add("placeholder-openai", "sk-...", "set OPENAI_API_KEY=%s in your shell")
	add("placeholder-github", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "token looks like %s")
	add("placeholder-env", "${GITHUB_TOKEN}", "password: %s")
	add("placeholder-angle", "<your-api-key>", "api_key = \"%s\"")
	add("placeholder-url", "${PGPASSWORD}", "postgres://app:%s@db/app")
	add("url-no-password", "postgres://app@db.internal:5432/app", "DATABASE_URL=%s")
	add("https-url", "https://github.com/acme/infra/pull/4412", "see %s")
	add("env-reference", "os.environ['OPENAI_API_KEY']", "api_key = %s")
	add("secret-name", "github-token", `secret_name = "%s"`)
	add("masked-password", "********", "password: %s")
	add("token-count", "12873", "total_tokens: %s")
	add("long-identifier", "AbstractSingletonProxyFactoryBeanDefinitionRegistryPostProcessor", "class %s implements Ordered")
	add("snake-identifier", "kubernetes_cluster_autoscaler_max_node_provision_time", "variable \"%s\" { default = 900 }")
	add("go-import", "github.com/aws/aws-sdk-go-v2/service/secretsmanager", "import \"%s\"")
	add("file-path", "/home/dana/src/acme/internal/auth/token_refresher_test.go", "--- FAIL: %s")
	add("k8s-pod", "web-7d4b9c8f6d-x2k9p", "pod/%s   1/1   Running   0   3h")
	add("bcrypt-hash", "$2a$12$"+randFrom(alnum+"./", 53), "password_hash: %s")
	add("ssh-public-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"+base64.StdEncoding.EncodeToString(randBytes(32))[:43]+" dana@laptop", "%s")
	add("pem-certificate", "-----BEGIN CERTIFICATE-----\nMIIB"+randFrom(alnum+"+/", 60)+"\n-----END CERTIFICATE-----", "%s")
	add("stripe-publishable", "pk_live_"+randFrom(alnum, 99), "Stripe('%s') // publishable, safe in the browser")
	add("ipv6", "2001:db8:85a3::8a2e:370:7334", "listening on [%s]:8080")
	add("mac-address", "3c:22:fb:9a:1e:07", "ether %s")
	add("semver-build", "v2.31.4-rc.2+build.8841", "released %s")
	add("timestamp", "2026-12-06T16:12:41.123456789Z", "\"time\": \"%s\"")
	add("css-class", "bg-gradient-to-r from-indigo-500 via-purple-500 to-pink-500", "<div class=\"%s\">")
	add("hex-color-list", "#1f2937 #374151 #4b5563 #6b7280", "palette: %s")
	add("random-filename", "IMG_20261206_161241_"+randFrom(digits, 6)+".jpg", "uploaded %s")
	add("ga-id", "G-"+randFrom(upper+digits, 10), "gtag('config', '%s')")
	add("public-key-var", "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"+randFrom(alnum, 20), "PUBLIC_KEY=%s")
	add("key-id", "key-"+randFrom(digits, 4), "key_id: %s")
	add("token-word", "rotate the token in config.yaml", "TODO: %s")
	add("base64-png-header", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk", "png starts with %s")
	return cs
}

func main() {
	cs := append(secrets(), lookalikes()...)
	b, err := json.MarshalIndent(cs, "", " ")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("testdata/corpus.json", append(b, '\n'), 0o644); err != nil {
		panic(err)
	}
	fmt.Printf("%d cases\n", len(cs))
}
