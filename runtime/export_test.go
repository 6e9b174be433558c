package runtime

// The stored message metadata, for the external tests that decode what a
// turn stored.
type (
	Metadata     = metadata
	ToolCallData = toolCallData
)
