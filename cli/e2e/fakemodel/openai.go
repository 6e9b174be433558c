package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// NewResponses serves the OpenAI Responses API (POST …/responses, streamed):
// response.created, response.output_item.done with a function_call or a
// message item, response.completed. A client points at it with base URL
// URL+"/v1".
func NewResponses(plan Plan) *Server { return newServer(responsesAPI{}, plan) }

// NewChatCompletions serves the OpenAI Chat Completions API (POST
// …/chat/completions, streamed as data-only chunks ending in [DONE], or
// not). A client points at it with base URL URL+"/v1".
func NewChatCompletions(plan Plan) *Server { return newServer(chatAPI{}, plan) }

type responsesAPI struct{}

func (responsesAPI) route(w http.ResponseWriter, r *http.Request) bool {
	return routeSuffix(w, r, "/responses")
}

// toolNames collects the "name" of each tool (or of its "function"), and
// of the tools nested in a namespace, as "<namespace>/<name>".
func toolNames(tools []map[string]any) []string {
	var names []string
	for _, t := range tools {
		if n, ok := t["name"].(string); ok {
			names = append(names, n)
		}
		if f, ok := t["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				names = append(names, n)
			}
		}
		if nested, ok := t["tools"].([]any); ok {
			var inner []map[string]any
			for _, e := range nested {
				if m, ok := e.(map[string]any); ok {
					inner = append(inner, m)
				}
			}
			ns, _ := t["name"].(string)
			for _, n := range toolNames(inner) {
				names = append(names, ns+"/"+n)
			}
		}
	}
	return names
}

func (responsesAPI) parse(_ string, body []byte) (request, error) {
	var in struct {
		Stream bool             `json:"stream"`
		Tools  []map[string]any `json:"tools"`
		Input  json.RawMessage  `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	req := request{stream: in.Stream, tools: toolNames(in.Tools)}
	var items []struct {
		Type   string `json:"type"`
		Output any    `json:"output"`
	}
	if json.Unmarshal(in.Input, &items) == nil { // a plain string input has no results
		for _, it := range items {
			if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
				req.results = append(req.results, Result{Text: leafText(it.Output)})
			}
		}
	}
	return req, nil
}

func (responsesAPI) write(w http.ResponseWriter, _ request, reply Step, callID string) {
	id := "resp_" + callID
	item := map[string]any{"type": "message", "id": "msg_" + callID, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": reply.Text, "annotations": []any{}}}}
	if reply.Tool != "" {
		item = map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "status": "completed",
			"name": reply.Tool, "arguments": argsJSON(reply.Args)}
		if ns, name, ok := strings.Cut(reply.Tool, "/"); ok { // a tool of a namespace
			item["namespace"], item["name"] = ns, name
		}
	}
	startSSE(w)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "usage": map[string]any{"input_tokens": 1, "input_tokens_details": nil, "output_tokens": 1,
			"output_tokens_details": nil, "total_tokens": 2},
	}})
}

type chatAPI struct{}

func (chatAPI) route(w http.ResponseWriter, r *http.Request) bool {
	return routeSuffix(w, r, "/chat/completions")
}

func (chatAPI) parse(_ string, body []byte) (request, error) {
	var in struct {
		Stream   bool             `json:"stream"`
		Tools    []map[string]any `json:"tools"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	req := request{stream: in.Stream, tools: toolNames(in.Tools)}
	for _, m := range in.Messages {
		if m.Role == "tool" {
			req.results = append(req.results, Result{Text: leafText(m.Content)})
		}
	}
	return req, nil
}

func (chatAPI) write(w http.ResponseWriter, req request, reply Step, callID string) {
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-" + callID, "object": "chat.completion.chunk", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	finish := "stop"
	if reply.Tool != "" {
		finish = "tool_calls"
	}
	if !req.stream {
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		if reply.Tool != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": reply.Tool, "arguments": argsJSON(reply.Args)}}}}
		}
		writeJSON(w, map[string]any{"id": "chatcmpl-" + callID, "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
		return
	}
	startSSE(w)
	if reply.Tool != "" {
		sse(w, "", chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": callID,
			"type": "function", "function": map[string]any{"name": reply.Tool, "arguments": ""}}}}, nil))
		sse(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": argsJSON(reply.Args)}}}}, nil))
	} else {
		sse(w, "", chunk(map[string]any{"role": "assistant", "content": reply.Text}, nil))
	}
	final := chunk(map[string]any{}, finish)
	final["usage"] = map[string]any{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
	sse(w, "", final)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
