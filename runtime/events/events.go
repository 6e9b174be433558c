package events

import "time"

// Event types the runtime reports, each with its payload type.
const (
	TurnStart     = "turn.start"     // TurnStartData
	TurnEnd       = "turn.end"       // TurnEndData
	ToolStart     = "tool.start"     // ToolStartData
	ToolEnd       = "tool.end"       // ToolEndData
	TextProgress  = "turn.text"      // TextData
	QuestionAsked = "question.asked" // QuestionData
	// StandingApproval: a standing approval ("allow for this session")
	// allowed a call without a question (reported by runtime/gate when its
	// StandingFunc says so), so a console can say why the call ran.
	StandingApproval = "approval.standing" // StandingData
)

// Observer receives the events of one turn or tool call, in order and one
// at a time: the turn waits while it runs, so it hands work off rather
// than block for long. Nil observes nothing.
type Observer func(Event)

// Emit stamps e with the time and hands it to o, if o is set.
func (o Observer) Emit(typ, sessionID string, data any) {
	if o != nil {
		o(Event{Type: typ, SessionID: sessionID, Time: time.Now(), Data: data})
	}
}

// Event is one thing that happened. Data is the payload struct of Type.
type Event struct {
	Type      string
	SessionID string
	Time      time.Time
	Data      any
}

// TurnStartData is the payload of [TurnStart].
type TurnStartData struct {
	RequestID string // the turn's request id (runtime.TurnRequest.RequestID)
	SessionID string
}

// TurnEndData is the payload of [TurnEnd].
type TurnEndData struct {
	RequestID  string
	SessionID  string
	Failed     bool   // the turn stored a failure text instead of a model answer
	ErrorClass string // why, when Failed
	Cancelled  bool   // the turn was stopped before its final write
}

// The lengths, in bytes, the model-supplied tool name and call id are
// clipped to (contracts/clip) in [ToolStartData] and [ToolEndData].
const (
	MaxToolLen   = 64
	MaxCallIDLen = 128
)

// ToolStartData is the payload of [ToolStart]. Tool and CallID are clipped
// (they come from the model; see [MaxToolLen]); arguments are never carried.
type ToolStartData struct {
	RequestID string // "" for a call outside a turn
	CallID    string
	Tool      string
}

// ToolEndData is the payload of [ToolEnd]: how the call ended. Denied
// reports a gate denial (then ReasonCode and Capability say which); the
// result's text is never carried.
type ToolEndData struct {
	RequestID  string
	CallID     string
	Tool       string
	IsError    bool
	Denied     bool
	ReasonCode string
	Capability string
}

// TextData is the payload of [TextProgress]: one fragment of streamed
// assistant text and the number of characters streamed in the turn so far.
type TextData struct {
	RequestID string
	Text      string
	Chars     int
}

// QuestionData is the payload of [QuestionAsked].
type QuestionData struct {
	QuestionID string
	Kind       string
	SessionID  string
}

// StandingData is the payload of [StandingApproval]. Tool and CallID are
// clipped like [ToolStartData]'s; arguments are never carried.
type StandingData struct {
	CallID string
	Tool   string
}
