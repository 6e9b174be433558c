package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// NewAnthropic serves the Anthropic Messages API (POST /v1/messages,
// streamed or not, and /v1/messages/count_tokens). A client points at it
// with its base URL (ANTHROPIC_BASE_URL=URL).
func NewAnthropic(plan Plan) *Server { return newServer(anthropicAPI{}, plan) }

type anthropicAPI struct{}

func (anthropicAPI) route(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 1})
		return false
	case strings.HasSuffix(r.URL.Path, "/v1/messages"):
		return true
	}
	http.NotFound(w, r)
	return false
}

func (anthropicAPI) parse(_ string, body []byte) (request, error) {
	var in struct {
		Stream bool `json:"stream"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	req := request{stream: in.Stream}
	for _, t := range in.Tools {
		req.tools = append(req.tools, t.Name)
	}
	for _, m := range in.Messages {
		var blocks []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
			IsError bool   `json:"is_error"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a plain string: no tool results
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				req.results = append(req.results, Result{Text: leafText(b.Content), IsError: b.IsError})
			}
		}
	}
	return req, nil
}

func (anthropicAPI) write(w http.ResponseWriter, req request, reply Step, callID string) {
	block := map[string]any{"type": "text", "text": reply.Text}
	stop := "end_turn"
	if reply.Tool != "" {
		block = map[string]any{"type": "tool_use", "id": "toolu_" + callID, "name": reply.Tool, "input": reply.Args}
		if reply.Args == nil {
			block["input"] = map[string]any{}
		}
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 1, "output_tokens": 1}
	if !req.stream {
		writeJSON(w, map[string]any{
			"id": "msg_" + callID, "type": "message", "role": "assistant", "model": "fake",
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}
	startSSE(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_" + callID, "type": "message", "role": "assistant", "model": "fake",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1, "output_tokens": 0},
	}})
	if reply.Tool != "" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": "toolu_" + callID, "name": reply.Tool, "input": map[string]any{},
		}})
		// The arguments arrive in two pieces, as a real stream splits them.
		args := argsJSON(reply.Args)
		half := len(args) / 2
		for half > 0 && !utf8.RuneStart(args[half]) {
			half--
		}
		for _, part := range []string{args[:half], args[half:]} {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": reply.Text}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 1}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}
