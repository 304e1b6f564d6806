package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/recallkit/recall"
)

// Item sizes of the workloads, in bytes of JSON, drawn uniformly.
const (
	minItemSize = 300
	maxItemSize = 2000
)

// poolSize is how many distinct items of each kind the corpus holds; the
// workloads cycle through them, so generating items costs nothing while a
// workload is timed.
const poolSize = 512

// corpus holds the conversation items every contender writes: the same
// bytes for everyone, generated from a fixed seed.
type corpus struct {
	user, call, output, assistant []recall.Item
}

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &corpus{}
	for i := range poolSize {
		callID := fmt.Sprintf("call_%04d", i)
		c.user = append(c.user, sized(r, func(text string) any {
			return message{Type: "message", Role: "user", Content: []part{{Type: "input_text", Text: text}}}
		}))
		c.call = append(c.call, sized(r, func(text string) any {
			args, _ := json.Marshal(map[string]string{"path": "src/main.go", "pattern": text})
			return functionCall{Type: "function_call", CallID: callID, Name: "grep", Arguments: string(args)}
		}))
		c.output = append(c.output, sized(r, func(text string) any {
			return functionOutput{Type: "function_call_output", CallID: callID, Output: text}
		}))
		c.assistant = append(c.assistant, sized(r, func(text string) any {
			return message{Type: "message", Role: "assistant", Content: []part{{Type: "output_text", Text: text}}}
		}))
	}
	return c
}

// The Responses API item shapes the corpus uses.
type (
	part struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	message struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []part `json:"content"`
	}
	functionCall struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	functionOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
)

// sized returns shape(text) encoded, with text grown until the item is a
// random size in [minItemSize, maxItemSize].
func sized(r *rand.Rand, shape func(text string) any) recall.Item {
	target := minItemSize + r.IntN(maxItemSize-minItemSize+1)
	empty, _ := json.Marshal(shape(""))
	// The text never needs escaping, except inside the function call's
	// arguments, where each quote costs one more byte; grow and trim until
	// the encoded item is exactly target bytes long.
	text := words(r, target-len(empty))
	for {
		b, _ := json.Marshal(shape(text))
		switch {
		case len(b) == target:
			return b
		case len(b) > target:
			text = text[:len(text)-(len(b)-target)]
		default:
			text += strings.Repeat("x", target-len(b))
		}
	}
}

var vocabulary = strings.Fields(`the session store appends each item to its log and a reader
replays the log to rebuild the view; a crash leaves the file with a torn line which recovery
keeps aside; listing reads an index not the items; tool output often holds source code
func main() { fmt.Println(err) } return nil, errors.Is(err, fs.ErrNotExist) with paths like
internal/filestore/append.go and numbers 42 1024 65536 0.7 and markdown **bold** lists`)

// words returns n bytes of text built from vocabulary, with no byte that
// JSON must escape.
func words(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocabulary[r.IntN(len(vocabulary))])
	}
	return b.String()[:max(n, 0)]
}

// turn returns chat turn i as the three saves an agent makes: the user's
// message, the tool call together with its output (a call is never stored
// without its output), and the assistant's answer.
func (c *corpus) turn(i int) [3][]recall.Item {
	j := i % poolSize
	return [3][]recall.Item{
		{c.user[j]},
		{c.call[j], c.output[j]},
		{c.assistant[j]},
	}
}

// itemsPerTurn is how many items one turn holds.
const itemsPerTurn = 4

// session returns the first n items of a conversation, turn after turn.
func (c *corpus) session(n int) []recall.Item {
	out := make([]recall.Item, 0, n+itemsPerTurn)
	for i := 0; len(out) < n; i++ {
		for _, save := range c.turn(i) {
			out = append(out, save...)
		}
	}
	return out[:n]
}
