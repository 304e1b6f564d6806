package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/provider/openai"
)

// Streamed responses: Server-Sent Events relayed (or, from a Chat
// Completions upstream, translated) as they arrive. The final
// response.completed event is held until the turn is stored.

// maxSSELine bounds one line of an upstream stream.
const maxSSELine = 16 << 20

// errStopStream ends the reading of an upstream stream early.
var errStopStream = errors.New("stream stopped")

// sseEvent is one event of a stream: its lines as received, and its data.
type sseEvent struct {
	raw  []byte // the event's lines, each ending in "\n", without the blank line
	data []byte // the data lines joined
}

// readSSE calls fn with each event of a Server-Sent Events stream until
// the stream ends or fn returns an error. A clean end returns nil.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var ev sseEvent
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: read the rest of it.
			rest, err2 := readLongLine(br, line)
			line, err = rest, err2
		}
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				if len(ev.raw) > 0 {
					return fn(ev)
				}
				return nil
			}
			return err
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if len(trimmed) == 0 {
			if len(ev.raw) > 0 {
				if ferr := fn(ev); ferr != nil {
					return ferr
				}
			}
			ev = sseEvent{}
		} else {
			ev.raw = append(ev.raw, trimmed...)
			ev.raw = append(ev.raw, '\n')
			if d, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
				if len(ev.data) > 0 {
					ev.data = append(ev.data, '\n')
				}
				ev.data = append(ev.data, bytes.TrimPrefix(d, []byte(" "))...)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if len(ev.raw) > 0 {
					return fn(ev)
				}
				return nil
			}
			return err
		}
	}
}

func readLongLine(br *bufio.Reader, first []byte) ([]byte, error) {
	line := append([]byte(nil), first...)
	for {
		more, err := br.ReadSlice('\n')
		line = append(line, more...)
		if len(line) > maxSSELine {
			return nil, fmt.Errorf("an event line over %d bytes", maxSSELine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// sseWriter writes events to the client and flushes each.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	seq int64 // the next sequence_number of an event made here
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

// raw relays an event as it was received.
func (sw *sseWriter) raw(ev []byte) error {
	if _, err := sw.w.Write(append(ev, '\n')); err != nil {
		return err
	}
	return sw.rc.Flush()
}

// event sends a Responses stream event of type typ with fields, numbered
// with the writer's own sequence.
func (sw *sseWriter) event(typ string, fields map[string]any) error {
	fields["type"] = typ
	fields["sequence_number"] = sw.seq
	sw.seq++
	b, _ := json.Marshal(fields)
	return sw.raw(fmt.Appendf(nil, "event: %s\ndata: %s\n", typ, b))
}

// fail sends an "error" event for err, in the shape OpenAI's streams use,
// in the API's words (apiErrorOf); an error of the server's own is said
// to be one, and logged by failStored.
func (sw *sseWriter) fail(err error) error {
	code, msg := "server_error", "The server had an error while processing your request."
	if ae := apiErrorOf(err); ae != nil {
		msg = ae.Message
		if c, ok := ae.Code.(string); ok && c != "" {
			code = c
		}
	}
	return sw.event("error", map[string]any{"code": code, "message": msg, "param": nil})
}

// failStored sends the error event of a turn that could not be stored,
// logging an error of the server's own.
func (s *Server) failStored(ctx context.Context, sw *sseWriter, err error) {
	if apiErrorOf(err) == nil {
		s.log.ErrorContext(ctx, "storing a streamed turn failed", "err", err)
	}
	_ = sw.fail(err)
}

// streamResponses relays a Responses API stream. The events go out as
// received, with the conversation added to the response they carry; the
// final response.completed (or response.incomplete) waits until the
// turn is stored, and is replaced by an error event when it cannot be.
func (s *Server) streamResponses(w http.ResponseWriter, r *http.Request, res *http.Response, t *turn) {
	ctx := r.Context()
	sw := newSSEWriter(w)
	err := readSSE(res.Body, func(ev sseEvent) error {
		var m map[string]json.RawMessage
		if t == nil || json.Unmarshal(ev.data, &m) != nil {
			return sw.raw(ev.raw)
		}
		var typ string
		_ = json.Unmarshal(m["type"], &typ)
		var resp map[string]json.RawMessage
		if json.Unmarshal(m["response"], &resp) != nil || resp == nil {
			return sw.raw(ev.raw)
		}
		switch typ {
		case "response.completed", "response.incomplete":
			if ctx.Err() != nil {
				return ctx.Err()
			}
			output, usage, _ := readResponse(resp)
			if err := s.commit(ctx, t, output, usage); err != nil {
				var seq int64
				_ = json.Unmarshal(m["sequence_number"], &seq)
				sw.seq = seq
				s.failStored(ctx, sw, err)
				return errStopStream
			}
		}
		m["response"], _ = json.Marshal(withConversation(resp, t))
		b, _ := json.Marshal(m)
		return sw.raw(fmt.Appendf(nil, "event: %s\ndata: %s\n", typ, b))
	})
	s.streamEnded(ctx, sw, err)
}

// streamEnded reports how a relayed stream ended when it did not end
// well: a client that went away is logged; an upstream that broke off
// gets an error event, if the client can still take one.
func (s *Server) streamEnded(ctx context.Context, sw *sseWriter, err error) {
	switch {
	case err == nil, errors.Is(err, errStopStream):
	case ctx.Err() != nil:
		s.log.InfoContext(ctx, "client went away mid-stream; nothing stored")
	default:
		s.log.WarnContext(ctx, "upstream stream broke off; nothing stored", "err", err)
		_ = sw.fail(&APIError{Code: "upstream_error", Message: "The upstream model server's stream broke off."}) // why is logged
	}
}

// streamChat translates a Chat Completions stream into Responses API
// events: the text as output_text deltas while it arrives, the function
// calls when the reply is complete, then response.completed once the
// turn is stored.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, res *http.Response, body map[string]json.RawMessage, t *turn) {
	ctx := r.Context()
	sw := newSSEWriter(w)
	respID, msgID := newObjectID("resp_"), newObjectID("msg_")
	start := withConversation(responseObject(body, "in_progress", nil, nil, respID), t)
	if err := sw.event("response.created", map[string]any{"response": start}); err != nil {
		return
	}
	if err := sw.event("response.in_progress", map[string]any{"response": start}); err != nil {
		return
	}
	tr := &chatTranslator{sw: sw, msgID: msgID}
	err := readSSE(res.Body, tr.chunk)
	if err != nil && !errors.Is(err, errStopStream) || ctx.Err() != nil {
		s.streamEnded(ctx, sw, err)
		return
	}
	if !tr.acc.Finished() {
		if tr.done || err == nil {
			_ = sw.fail(&APIError{Code: "upstream_error", Message: "The upstream model server's stream ended before the reply finished."})
		}
		return
	}
	items, usage := tr.acc.Items(), tr.acc.Usage()
	if tr.finish(items) != nil {
		return
	}
	if ctx.Err() != nil {
		s.streamEnded(ctx, sw, ctx.Err())
		return
	}
	if err := s.commit(ctx, t, items, usage); err != nil {
		s.failStored(ctx, sw, err)
		return
	}
	_ = sw.event("response.completed", map[string]any{"response": withConversation(responseObject(body, "completed", items, &usage, respID), t)})
}

// withConversation adds the conversation of t, when there is a turn to
// store, to the response object resp, and returns resp.
func withConversation(resp map[string]json.RawMessage, t *turn) map[string]json.RawMessage {
	if t != nil {
		resp["conversation"], _ = json.Marshal(map[string]string{"id": t.key.Session})
	}
	return resp
}

// chatTranslator turns the chunks of a Chat Completions stream into
// Responses API events on sw, the reply's text as the deltas of the
// message msgID, and gathers the reply.
type chatTranslator struct {
	sw      *sseWriter
	msgID   string
	acc     openai.ChatStream
	text    bytes.Buffer // the reply's text so far
	started bool         // the message and its text part were announced
	done    bool         // the stream said [DONE]
}

// chunk handles one event of the upstream stream: [DONE] stops the
// stream, as does an upstream error, which goes to the client as an error
// event; a chunk is added to the reply, and its text goes out as a delta,
// the message and its text part announced before the first.
func (c *chatTranslator) chunk(ev sseEvent) error {
	data := bytes.TrimSpace(ev.data)
	if len(data) == 0 {
		return nil
	}
	if string(data) == "[DONE]" {
		c.done = true
		return errStopStream
	}
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error != nil {
		_ = c.sw.fail(&APIError{Code: "upstream_error", Message: e.Error.Message})
		return errStopStream
	}
	d, err := c.acc.Add(data)
	if err != nil {
		return err
	}
	if d == "" {
		return nil
	}
	if !c.started {
		c.started = true
		if err := c.sw.event("response.output_item.added", map[string]any{"output_index": 0, "item": c.message("in_progress", []any{})}); err != nil {
			return err
		}
		if err := c.sw.event("response.content_part.added", map[string]any{"item_id": c.msgID, "output_index": 0, "content_index": 0, "part": outputTextPart("")}); err != nil {
			return err
		}
	}
	c.text.WriteString(d)
	return c.sw.event("response.output_text.delta", map[string]any{"item_id": c.msgID, "output_index": 0, "content_index": 0, "delta": d, "logprobs": []any{}})
}

// finish sends the events that complete each item of the reply: the done
// events of the streamed message's text, the function calls added whole,
// and each item done. It returns the first error of a send.
func (c *chatTranslator) finish(items []recall.Item) error {
	idx := 0
	for _, it := range items {
		var item map[string]any
		_ = json.Unmarshal(it, &item)
		switch {
		case it.Type() == "message" && c.started:
			text := c.text.String()
			for _, ev := range []struct {
				typ    string
				fields map[string]any
			}{
				{"response.output_text.done", map[string]any{"item_id": c.msgID, "output_index": idx, "content_index": 0, "text": text, "logprobs": []any{}}},
				{"response.content_part.done", map[string]any{"item_id": c.msgID, "output_index": idx, "content_index": 0, "part": outputTextPart(text)}},
			} {
				if err := c.sw.event(ev.typ, ev.fields); err != nil {
					return err
				}
			}
			item["id"] = c.msgID
			item["status"] = "completed"
		default:
			if err := c.sw.event("response.output_item.added", map[string]any{"output_index": idx, "item": item}); err != nil {
				return err
			}
		}
		if err := c.sw.event("response.output_item.done", map[string]any{"output_index": idx, "item": item}); err != nil {
			return err
		}
		idx++
	}
	return nil
}

// message is the assistant message msgID in the Responses API's shape,
// with status and content.
func (c *chatTranslator) message(status string, content []any) map[string]any {
	return map[string]any{"type": "message", "id": c.msgID, "status": status, "role": "assistant", "content": content}
}

// outputTextPart is an output_text content part holding text.
func outputTextPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}
