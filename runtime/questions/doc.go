// Package questions tracks the questions the runtime asks a person: free
// answers (ask), yes/no (confirm) and tool approvals (approval).
//
//	reg := questions.New(nil)
//	ans, err := reg.Ask(ctx, questions.Question{SessionID: sid, Kind: questions.KindConfirm, Prompt: "Deploy now?"})
//	if err == nil && ans.Approved() {
//		// go ahead
//	}
//
// Every question is resolved exactly once, by the first of: an answer
// ([Registry.Resolve], claim-once), a decline, its context ending
// (cancelled), its timeout (default 300 s) or [Registry.CancelSession],
// which declines every pending question of one session (a cancelled turn's).
// The registry tells no one that a question was asked: whoever registers
// it does (runtime/gate reports question.asked to the turn's observer).
package questions
