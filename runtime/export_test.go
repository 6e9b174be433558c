package runtime

import "github.com/openprogram/openprogram/runtime/provider"

// EstimateRequest is the history budget's estimate of a whole request.
func EstimateRequest(req provider.Request) int {
	n := estimateFixed(req.System, req.Tools)
	for _, m := range req.Messages {
		n += estimateMessage(m)
	}
	return n
}

// HistoryBudget exposes historyBudget.
var HistoryBudget = historyBudget

// The stored message metadata, for the external tests that decode what a
// turn stored.
type (
	Metadata     = metadata
	ToolCallData = toolCallData
)
