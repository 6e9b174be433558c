package scripted_test

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
)

func Example() {
	s, err := scripted.Parse([]byte(`{"turns":[
		{"tool_calls":[{"name":"read","arguments":{"path":"README.md"}}]},
		{"text":"The README says hello."}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p := scripted.New(s)
	for range 3 {
		resp, _ := p.Stream(context.Background(), provider.Request{}, nil)
		for _, c := range resp.ToolCalls {
			fmt.Printf("call %s %s %s\n", c.ID, c.Name, c.Arguments)
		}
		if resp.Text != "" {
			fmt.Println(resp.Text)
		}
	}
	// Output:
	// call call_1 read {"path":"README.md"}
	// [scripted] The README says hello.
	// [scripted] script exhausted
}
