package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
)

// NewGemini serves the Gemini API's generateContent and
// streamGenerateContent (POST …/models/<model>:<method>; the stream is
// data-only SSE, one GenerateContentResponse per event) and countTokens. A
// client points at it with its base URL (GOOGLE_GEMINI_BASE_URL=URL).
func NewGemini(plan Plan) *Server { return newServer(geminiAPI{}, plan) }

type geminiAPI struct{}

func (geminiAPI) route(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": 1})
		return false
	case strings.HasSuffix(p, ":streamGenerateContent"), strings.HasSuffix(p, ":generateContent"):
		return true
	}
	http.NotFound(w, r)
	return false
}

func (geminiAPI) parse(path string, body []byte) (request, error) {
	var in struct {
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		Contents []struct {
			Parts []struct {
				FunctionResponse *struct {
					Response any `json:"response"`
				} `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return request{}, err
	}
	req := request{stream: strings.HasSuffix(path, ":streamGenerateContent")}
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			req.tools = append(req.tools, f.Name)
		}
	}
	for _, c := range in.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				resp, _ := p.FunctionResponse.Response.(map[string]any)
				_, failed := resp["error"]
				req.results = append(req.results, Result{Text: leafText(p.FunctionResponse.Response), IsError: failed})
			}
		}
	}
	return req, nil
}

func (geminiAPI) write(w http.ResponseWriter, req request, reply Step, _ string) {
	part := map[string]any{"text": reply.Text}
	if reply.Tool != "" {
		args := reply.Args
		if args == nil {
			args = map[string]any{}
		}
		part = map[string]any{"functionCall": map[string]any{"name": reply.Tool, "args": args}}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
		"modelVersion":  "fake",
	}
	if !req.stream {
		writeJSON(w, resp)
		return
	}
	startSSE(w)
	sse(w, "", resp)
}
