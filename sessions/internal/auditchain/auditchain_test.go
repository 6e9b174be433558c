package auditchain

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

func TestCanonicalPayload(t *testing.T) {
	for in, want := range map[string]string{
		``:     `{}`,
		"  \n": `{}`,
		`{"b":1,"a":{"d":[3,{"z":1,"y":2}],"c":"<&>"}}`: `{"a":{"c":"<&>","d":[3,{"y":2,"z":1}]},"b":1}`,
		`{ "n" : 12345678901234567890.5e3 }`:            `{"n":12345678901234567890.5e3}`,
		`"ünï"`:                                         `"ünï"`,
		`null`:                                          `null`,
		`{"s":"a\u2028b"}`:                              "{\"s\":\"a\u2028b\"}",
	} {
		got, err := CanonicalPayload(json.RawMessage(in))
		if err != nil {
			t.Errorf("CanonicalPayload(%q) error: %v", in, err)
			continue
		}
		if string(got) != want {
			t.Errorf("CanonicalPayload(%q) = %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{`{"a":`, `{} {}`, `nope`} {
		if _, err := CanonicalPayload(json.RawMessage(bad)); err == nil {
			t.Errorf("CanonicalPayload(%q) succeeded, want an error", bad)
		}
	}
}

// TestHashPinned pins the hash encoding: changing it breaks every stored chain.
func TestHashPinned(t *testing.T) {
	ts := time.UnixMicro(1_700_000_000_123_456)
	got := Hash(Genesis, 1, ts, "server.start", "cli", "", []byte(`{"pid":42}`))
	// sha256 of `64:000…0` `1:1` `16:1700000000123456` `12:server.start` `3:cli` `0:` `10:{"pid":42}`.
	const want = "5eeb07b0380ef83789f38ee06a0bded60b01d077a7a73597f74a52df26c7a235"
	if got != want {
		t.Errorf("Hash = %s, want %s", got, want)
	}
	if Hash(Genesis, 1, ts, "ab", "c", "", nil) == Hash(Genesis, 1, ts, "a", "bc", "", nil) {
		t.Errorf("Hash does not separate fields")
	}
}

func chain(n int) []sessions.AuditRecord {
	prev := Genesis
	out := make([]sessions.AuditRecord, n)
	for i := range out {
		r := sessions.AuditRecord{ID: int64(i + 1), TS: time.UnixMicro(int64(i)), Type: "t", Origin: "o", Payload: json.RawMessage(`{}`), PrevHash: prev}
		r.Hash = RecordHash(r)
		prev = r.Hash
		out[i] = r
	}
	return out
}

func verify(recs []sessions.AuditRecord, headID int64, headHash string) sessions.AuditReport {
	return walk(NewVerifier(nil, Head{ID: headID, Hash: headHash}, nil), recs)
}

func walk(v *Verifier, recs []sessions.AuditRecord) sessions.AuditReport {
	for _, r := range recs {
		if !v.Add(r) {
			break
		}
	}
	return v.Finish()
}

func TestVerifier(t *testing.T) {
	c := chain(5)
	head, headHash := int64(5), c[4].Hash
	edited := append([]sessions.AuditRecord{}, c...)
	edited[2].Type = "x"
	swapped := append([]sessions.AuditRecord{}, c...)
	swapped[1], swapped[3] = c[3], c[1]
	swapped[1].ID, swapped[3].ID = 2, 4
	for _, tc := range []struct {
		name     string
		recs     []sessions.AuditRecord
		head     int64
		headHash string
		want     sessions.AuditReport
	}{
		{"empty", nil, 0, "", sessions.AuditReport{OK: true}},
		{"intact", c, head, headHash, sessions.AuditReport{Records: 5, OK: true}},
		{"edited", edited, head, headHash, sessions.AuditReport{Records: 2, FirstBadID: 3}},
		{"deleted", append(append([]sessions.AuditRecord{}, c[:2]...), c[3:]...), head, headHash, sessions.AuditReport{Records: 2, FirstBadID: 3}},
		{"deleted first", c[1:], head, headHash, sessions.AuditReport{FirstBadID: 1}},
		{"swapped", swapped, head, headHash, sessions.AuditReport{Records: 1, FirstBadID: 2}},
		{"tail truncated", c[:4], head, headHash, sessions.AuditReport{Records: 4, FirstBadID: 5}},
		{"all deleted", nil, head, headHash, sessions.AuditReport{FirstBadID: 1}},
		{"head behind", c, 4, c[3].Hash, sessions.AuditReport{Records: 5, FirstBadID: 5}},
		{"head hash differs", c, head, c[3].Hash, sessions.AuditReport{Records: 5, FirstBadID: 5}},
	} {
		got := verify(tc.recs, tc.head, tc.headHash)
		if got.OK != (got.Problem == "") {
			t.Errorf("%s: report %+v: Problem must be set exactly when not OK", tc.name, got)
		}
		got.Problem = ""
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: report (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestMACPinned pins the keyed encoding: changing it breaks every stored chain.
func TestMACPinned(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	ts := time.UnixMicro(1_700_000_000_123_456)
	got := MAC(key, Genesis, 1, ts, "server.start", "cli", "", []byte(`{"pid":42}`))
	if got == Hash(Genesis, 1, ts, "server.start", "cli", "", []byte(`{"pid":42}`)) || len(got) != 64 {
		t.Fatalf("MAC = %s, want 64 hex digits unlike the unkeyed hash", got)
	}
	const want = "ea95ab714e88a48e99be54a70ef719375fb8466911bd37a4c3d4ca10349ba65a"
	if got != want {
		t.Errorf("MAC = %s, want %s", got, want)
	}
	if MAC(bytes.Repeat([]byte{2}, 32), Genesis, 1, ts, "server.start", "cli", "", nil) == MAC(key, Genesis, 1, ts, "server.start", "cli", "", nil) {
		t.Errorf("MAC does not depend on the key")
	}
	if KeyID(key) == KeyID(bytes.Repeat([]byte{2}, 32)) || len(KeyID(key)) != 16 {
		t.Errorf("KeyID = %s, want 16 hex digits that differ between keys", KeyID(key))
	}
}

func keyedChain(key []byte, n int) ([]sessions.AuditRecord, Head) {
	var out []sessions.AuditRecord
	head := Head{}
	for i := range n {
		r := Next(key, head, head.ID+1, time.UnixMicro(int64(i)), sessions.NewAuditRecord{Type: "t", Origin: "o"}, json.RawMessage(`{}`))
		head = Seal(key, r)
		out = append(out, r)
	}
	return out, head
}

func TestKeyedVerifier(t *testing.T) {
	key, other := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{8}, 32)
	c, head := keyedChain(key, 5)
	truncated := Seal(key, c[2])
	unsealed := head
	unsealed.ID, unsealed.Hash = 3, c[2].Hash
	for _, tc := range []struct {
		name   string
		key    []byte
		recs   []sessions.AuditRecord
		head   Head
		anchor *sessions.AuditHead
		want   sessions.AuditReport
	}{
		{"intact", key, c, head, nil, sessions.AuditReport{Records: 5, OK: true}},
		{"anchored", key, c, head, &sessions.AuditHead{ID: 4, MAC: c[3].Hash}, sessions.AuditReport{Records: 5, OK: true}},
		{"anchor mismatch", key, c, head, &sessions.AuditHead{ID: 4, MAC: c[2].Hash}, sessions.AuditReport{Records: 3, FirstBadID: 4}},
		{"head moved back", key, c[:3], unsealed, nil, sessions.AuditReport{Records: 3, FirstBadID: 4}},
		{"truncated by a key holder", key, c[:3], truncated, nil, sessions.AuditReport{Records: 3, OK: true}},
		{"truncated past the anchor", key, c[:3], truncated, &sessions.AuditHead{ID: 5, MAC: c[4].Hash}, sessions.AuditReport{Records: 3, FirstBadID: 4}},
		{"wrong key", other, c, head, nil, sessions.AuditReport{FirstBadID: 1}},
		{"unkeyed chain", key, chain(3), Head{ID: 3, Hash: chain(3)[2].Hash}, nil, sessions.AuditReport{Records: 3, FirstBadID: 1}},
	} {
		got := walk(NewVerifier(tc.key, tc.head, tc.anchor), tc.recs)
		if got.OK != (got.Problem == "") {
			t.Errorf("%s: report %+v: Problem must be set exactly when not OK", tc.name, got)
		}
		got.Problem = ""
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: report (-want +got):\n%s", tc.name, diff)
		}
	}
	if err := CheckAppend(key, unsealed); !errors.Is(err, sessions.ErrAuditBroken) {
		t.Errorf("CheckAppend(head moved back) = %v, want ErrAuditBroken", err)
	}
	if err := CheckAppend(other, head); !errors.Is(err, sessions.ErrAuditKey) {
		t.Errorf("CheckAppend(wrong key) = %v, want ErrAuditKey", err)
	}
	if err := CheckAppend(key, head); err != nil {
		t.Errorf("CheckAppend(intact head) = %v, want nil", err)
	}
}

func benchRecord() sessions.AuditRecord {
	return sessions.AuditRecord{ID: 12345, TS: time.UnixMicro(1_700_000_000_123_456), Type: "mcp.request.cancelled",
		Origin: "mcp/0123456789abcdef", SessionID: "mcp_s", PrevHash: Genesis,
		Payload: json.RawMessage(`{"client_id":"0123456789abcdef","reason":"prompt_cancel","request_id":7,"session_id":"mcp_s"}`)}
}

// BenchmarkRecordHash is the unkeyed hash of the first version, for comparison.
func BenchmarkRecordHash(b *testing.B) {
	r := benchRecord()
	for b.Loop() {
		RecordHash(r)
	}
}

func BenchmarkRecordMAC(b *testing.B) {
	r, key := benchRecord(), bytes.Repeat([]byte{1}, 32)
	for b.Loop() {
		RecordMAC(key, r)
	}
}
