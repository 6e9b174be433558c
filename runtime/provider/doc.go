// Package provider is the runtime's small, streaming model interface and
// what its implementations share: messages, tool calls, classified errors
// and the one retry policy.
//
//	p, err := openai.New(openai.Options{Model: "qwen2.5:7b", BaseURL: "http://127.0.0.1:11434/v1"})
//	if err != nil {
//		return err
//	}
//	p2 := provider.WithRetry(p, provider.DefaultRetryPolicy())
//	resp, err := p2.Stream(ctx, provider.Request{
//		System:   "Answer briefly.",
//		Messages: []provider.Message{{Role: provider.RoleUser, Content: "Hello?"}},
//	}, func(d provider.Delta) { fmt.Print(d.Text) })
//
// # Implementations
//
//   - [github.com/openprogram/openprogram/runtime/provider/openai]: OpenAI
//     Chat Completions and every compatible server (Ollama, vLLM, llama.cpp,
//     LM Studio, OpenRouter), through github.com/openai/openai-go.
//   - [github.com/openprogram/openprogram/runtime/provider/anthropic]: the
//     Anthropic Messages API, through github.com/anthropics/anthropic-sdk-go.
//   - [github.com/openprogram/openprogram/runtime/provider/scripted]: replays
//     a JSON script, for tests and offline demos; its replies say so.
//
// [github.com/openprogram/openprogram/runtime/provider/providertest] runs
// fake endpoints speaking both wire formats, for tests.
//
// # Errors and retries
//
// Every failure is an [*Error] with a [Class]: auth, rate limit (with the
// server's Retry-After), context length, server, network, invalid request
// or cancelled. The SDKs' own retries are off; [WithRetry] retries only rate
// limits, server and network errors, only before any text of the attempt
// was delivered, with capped, jittered exponential backoff whose waits end
// when the context does. Cancelling the context aborts an in-flight HTTP
// request at once. Errors never contain an API key.
package provider
