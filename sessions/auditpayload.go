package sessions

import (
	"context"
	"encoding/json"
	"fmt"
)

// AppendAuditPayload appends one audit record whose payload is v encoded as
// JSON (the typed payload structs of mcpserver and cli). It is
// [Store.AppendAudit] with the encoding done in one place.
func AppendAuditPayload(ctx context.Context, st Store, typ, origin, sessionID string, v any) (AuditRecord, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return AuditRecord{}, fmt.Errorf("encode the %s audit payload: %w", typ, err)
	}
	return st.AppendAudit(ctx, NewAuditRecord{Type: typ, Origin: origin, SessionID: sessionID, Payload: payload})
}
