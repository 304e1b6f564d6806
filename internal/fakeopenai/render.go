package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// created is the fixed creation time of every object, so output is
// deterministic.
const created = 1750000000

// render writes one Reply in the wire format of the request's endpoint.
type render struct {
	req Request
	rep Reply
	w   http.ResponseWriter
	seq int // SSE sequence_number
	// done is closed when the client goes away (for StallStream).
	done <-chan struct{}
}

// chunks splits text into the deltas a stream sends: words, and runs of
// at most 8 runes within long words, so CJK text streams in pieces too.
func chunks(text string) []string {
	var out []string
	for _, w := range strings.SplitAfter(text, " ") {
		r := []rune(w)
		for len(r) > 8 {
			out = append(out, string(r[:8]))
			r = r[8:]
		}
		if len(r) > 0 {
			out = append(out, string(r))
		}
	}
	return out
}

func (r *render) sse(event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(r.w, "event: %s\n", event)
	}
	fmt.Fprintf(r.w, "data: %s\n\n", b)
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *render) startSSE() {
	r.w.Header().Set("Content-Type", "text/event-stream")
	r.w.Header().Set("Cache-Control", "no-cache")
	r.w.WriteHeader(http.StatusOK)
}

func (r *render) writeJSON(v any) {
	r.w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	r.w.Write(b)
}

// obj is a JSON object with ordered construction by literal; encoding/json
// sorts map keys, which the SDK does not mind.
type obj = map[string]any

// ---- Responses API ----

func (r *render) respID() string { return fmt.Sprintf("resp_%d", r.req.N) }
func (r *render) msgID() string  { return fmt.Sprintf("msg_%d", r.req.N) }

func (r *render) fcID(i int) string { return fmt.Sprintf("fc_%d_%d", r.req.N, i+1) }

func (r *render) textPart(text string) obj {
	return obj{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func (r *render) messageItem(status string, content []any) obj {
	return obj{"type": "message", "id": r.msgID(), "status": status, "role": "assistant", "content": content}
}

func (r *render) callItem(i int, status, args string) obj {
	c := r.rep.ToolCalls[i]
	return obj{"type": "function_call", "id": r.fcID(i), "call_id": c.ID, "name": c.Name, "arguments": args, "status": status}
}

// outputItems returns the completed output: extra items, the message, the
// function calls.
func (r *render) outputItems() []any {
	var out []any
	for _, x := range r.rep.Extra {
		out = append(out, x)
	}
	if r.rep.Text != "" {
		out = append(out, r.messageItem("completed", []any{r.textPart(r.rep.Text)}))
	}
	for i, c := range r.rep.ToolCalls {
		out = append(out, r.callItem(i, "completed", c.Arguments))
	}
	return out
}

func (r *render) response(status string, output []any, withUsage bool) obj {
	var instructions any
	if s := r.req.Instructions(); s != "" {
		instructions = s
	}
	resp := obj{
		"id": r.respID(), "object": "response", "created_at": created, "status": status,
		"error": nil, "incomplete_details": nil, "instructions": instructions,
		"model": r.req.Model, "output": output, "parallel_tool_calls": true,
		"temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": []any{},
		"text": obj{"format": obj{"type": "text"}}, "store": true, "metadata": obj{},
		"usage": nil,
	}
	if t := r.req.Temperature(); t != nil {
		resp["temperature"] = *t
	}
	if withUsage {
		u := r.rep.Usage
		resp["usage"] = obj{
			"input_tokens": u.Input, "input_tokens_details": obj{"cached_tokens": 0},
			"output_tokens": u.Output, "output_tokens_details": obj{"reasoning_tokens": 0},
			"total_tokens": u.Input + u.Output,
		}
	}
	return resp
}

func (r *render) responses() {
	if !r.req.Stream {
		r.writeJSON(r.response("completed", r.outputItems(), true))
		return
	}
	r.startSSE()
	ev := func(typ string, fields obj) {
		fields["type"] = typ
		fields["sequence_number"] = r.seq
		r.seq++
		r.sse(typ, fields)
	}
	ev("response.created", obj{"response": r.response("in_progress", []any{}, false)})
	ev("response.in_progress", obj{"response": r.response("in_progress", []any{}, false)})
	idx := 0
	for _, x := range r.rep.Extra {
		ev("response.output_item.added", obj{"output_index": idx, "item": x})
		ev("response.output_item.done", obj{"output_index": idx, "item": x})
		idx++
	}
	if text := r.rep.Text; text != "" {
		id := r.msgID()
		ev("response.output_item.added", obj{"output_index": idx, "item": r.messageItem("in_progress", []any{})})
		ev("response.content_part.added", obj{"item_id": id, "output_index": idx, "content_index": 0, "part": r.textPart("")})
		for i, d := range chunks(text) {
			ev("response.output_text.delta", obj{"item_id": id, "output_index": idx, "content_index": 0, "delta": d, "logprobs": []any{}})
			if i == 0 && r.rep.StreamError {
				ev("error", obj{"code": "server_error", "message": r.rep.Error, "param": nil})
				return
			}
			if i == 0 && r.rep.CutStream {
				return
			}
			if i == 0 && r.rep.StallStream {
				<-r.done
				return
			}
		}
		ev("response.output_text.done", obj{"item_id": id, "output_index": idx, "content_index": 0, "text": text, "logprobs": []any{}})
		ev("response.content_part.done", obj{"item_id": id, "output_index": idx, "content_index": 0, "part": r.textPart(text)})
		ev("response.output_item.done", obj{"output_index": idx, "item": r.messageItem("completed", []any{r.textPart(text)})})
		idx++
	}
	for i, c := range r.rep.ToolCalls {
		ev("response.output_item.added", obj{"output_index": idx, "item": r.callItem(i, "in_progress", "")})
		for _, d := range chunks(c.Arguments) {
			ev("response.function_call_arguments.delta", obj{"item_id": r.fcID(i), "output_index": idx, "delta": d})
		}
		ev("response.function_call_arguments.done", obj{"item_id": r.fcID(i), "output_index": idx, "name": c.Name, "arguments": c.Arguments})
		ev("response.output_item.done", obj{"output_index": idx, "item": r.callItem(i, "completed", c.Arguments)})
		idx++
	}
	ev("response.completed", obj{"response": r.response("completed", r.outputItems(), true)})
}

// ---- Responses API: compact ----

// compact answers POST /v1/responses/compact as OpenAI does: a
// "response.compaction" object whose output is every user message of the
// input, followed by one "compaction" item. Its encrypted_content is the
// Reply's Text, or "enc_<n>" when the Reply has none.
func (r *render) compact() {
	var output []any
	for i, m := range r.req.Messages() {
		if m.Role != "user" {
			continue
		}
		output = append(output, obj{"id": fmt.Sprintf("msg_%d_%d", r.req.N, i+1), "type": "message", "status": "completed",
			"role": "user", "content": []any{obj{"type": "input_text", "text": m.Text}}})
	}
	enc := r.rep.Text
	if enc == "" {
		enc = fmt.Sprintf("enc_%d", r.req.N)
	}
	output = append(output, obj{"id": fmt.Sprintf("cmp_%d", r.req.N), "type": "compaction", "encrypted_content": enc})
	u := r.rep.Usage
	r.writeJSON(obj{
		"id": r.respID(), "object": "response.compaction", "created_at": created, "output": output,
		"usage": obj{
			"input_tokens": u.Input, "input_tokens_details": obj{"cached_tokens": 0},
			"output_tokens": u.Output, "output_tokens_details": obj{"reasoning_tokens": 0},
			"total_tokens": u.Input + u.Output,
		},
	})
}

// ---- Chat Completions API ----

func (r *render) chatID() string { return fmt.Sprintf("chatcmpl-%d", r.req.N) }

func (r *render) finishReason() string {
	if len(r.rep.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func (r *render) chatUsage() obj {
	u := r.rep.Usage
	return obj{"prompt_tokens": u.Input, "completion_tokens": u.Output, "total_tokens": u.Input + u.Output}
}

func (r *render) chat() {
	if !r.req.Stream {
		var content any
		if r.rep.Text != "" {
			content = r.rep.Text
		}
		msg := obj{"role": "assistant", "content": content, "refusal": nil}
		if len(r.rep.ToolCalls) > 0 {
			var calls []any
			for _, c := range r.rep.ToolCalls {
				calls = append(calls, obj{"id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": c.Arguments}})
			}
			msg["tool_calls"] = calls
		}
		r.writeJSON(obj{
			"id": r.chatID(), "object": "chat.completion", "created": created, "model": r.req.Model,
			"choices": []any{obj{"index": 0, "message": msg, "logprobs": nil, "finish_reason": r.finishReason()}},
			"usage":   r.chatUsage(), "system_fingerprint": "fp_fake",
		})
		return
	}
	r.startSSE()
	chunk := func(delta obj, finish any) {
		r.sse("", obj{
			"id": r.chatID(), "object": "chat.completion.chunk", "created": created, "model": r.req.Model,
			"system_fingerprint": "fp_fake",
			"choices":            []any{obj{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
	}
	chunk(obj{"role": "assistant", "content": ""}, nil)
	for i, d := range chunks(r.rep.Text) {
		chunk(obj{"content": d}, nil)
		if i == 0 && r.rep.StreamError {
			r.sse("", obj{"error": obj{"message": r.rep.Error, "type": "server_error", "param": nil, "code": nil}})
			return
		}
		if i == 0 && r.rep.CutStream {
			return
		}
		if i == 0 && r.rep.StallStream {
			<-r.done
			return
		}
	}
	for i, c := range r.rep.ToolCalls {
		chunk(obj{"tool_calls": []any{obj{"index": i, "id": c.ID, "type": "function", "function": obj{"name": c.Name, "arguments": ""}}}}, nil)
		for _, d := range chunks(c.Arguments) {
			chunk(obj{"tool_calls": []any{obj{"index": i, "function": obj{"arguments": d}}}}, nil)
		}
	}
	chunk(obj{}, r.finishReason())
	var opts struct {
		IncludeUsage bool `json:"include_usage"`
	}
	if r.req.Field("stream_options", &opts); opts.IncludeUsage {
		r.sse("", obj{
			"id": r.chatID(), "object": "chat.completion.chunk", "created": created, "model": r.req.Model,
			"choices": []any{}, "usage": r.chatUsage(),
		})
	}
	fmt.Fprint(r.w, "data: [DONE]\n\n")
}
